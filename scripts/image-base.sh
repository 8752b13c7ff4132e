#!/usr/bin/env bash
# The Containerfile's base image (its first FROM), for buildah: pulled from its registry when one
# answers, otherwise made here and tagged under the same name, so the Containerfile builds as it
# is. The local base is what the registry's node:22-bookworm-slim is in the ways the Containerfile
# relies on: Debian bookworm (debootstrap, minbase, with CA certificates for npm), Node 22 at
# /usr/local/bin/node (the binary of the repository's own `node` npm dependency, which the npm
# registry ships), npm at /usr/local/bin/npm, and the user `node` with uid and gid 1000; it trusts
# the CAs this machine trusts.
# The Debian tree is cached in $HUBOPS_IMAGE_CACHE and made again after a week.
set -euo pipefail
cd "$(dirname "$0")/.."
STORE=(--storage-driver vfs)
BASE=$(awk 'toupper($1) == "FROM" { print $2; exit }' Containerfile)
CACHE=${HUBOPS_IMAGE_CACHE:-/var/cache/hubops-image}
ROOTFS=$CACHE/rootfs-bookworm

if buildah "${STORE[@]}" inspect --type image "$BASE" >/dev/null 2>&1; then
  echo "base $BASE: already in buildah's storage"
  exit 0
fi
if timeout 60 buildah "${STORE[@]}" pull --quiet "$BASE" >/dev/null 2>&1; then
  echo "base $BASE: pulled from its registry"
  exit 0
fi
echo "base $BASE: no registry answers; making it locally"

NODE_BIN=$(readlink -f node_modules/.bin/node)
"$NODE_BIN" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a === 22 && b >= 18 ? 0 : 1)' ||
  { echo "node_modules/.bin/node is not Node 22.18+: run npm install first" >&2; exit 1; }
NPM_DIR=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")

mkdir -p "$CACHE"
if [[ ! -f $ROOTFS/.complete ]] || [[ -n $(find "$ROOTFS/.complete" -mtime +7) ]]; then
  rm -rf "$ROOTFS" "$ROOTFS.tmp"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$ROOTFS.tmp" http://deb.debian.org/debian >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -n 20 "$CACHE/debootstrap.log" >&2; exit 1; }
  chroot "$ROOTFS.tmp" apt-get clean
  touch "$ROOTFS.tmp/.complete"
  mv "$ROOTFS.tmp" "$ROOTFS"
fi

ctr=$(buildah "${STORE[@]}" from scratch)
trap 'buildah "${STORE[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt=$(buildah "${STORE[@]}" mount "$ctr")
cp -a "$ROOTFS/." "$mnt/"
rm -f "$mnt/.complete"
install -m 0755 "$NODE_BIN" "$mnt/usr/local/bin/node"
mkdir -p "$mnt/usr/local/lib/node_modules"
cp -a "$NPM_DIR" "$mnt/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
# The machine's own trust store (it may reach the npm registry through a proxy with a CA of its
# own), for npm in the build stage as for npm here.
cp /etc/ssl/certs/ca-certificates.crt "$mnt/etc/ssl/certs/ca-certificates.crt"
mkdir -p "$mnt/usr/local/etc"
echo 'cafile=/etc/ssl/certs/ca-certificates.crt' >"$mnt/usr/local/etc/npmrc"
chroot "$mnt" groupadd --gid 1000 node
chroot "$mnt" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
buildah "${STORE[@]}" umount "$ctr" >/dev/null
buildah "${STORE[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env NODE_VERSION="$("$NODE_BIN" -p process.versions.node)" \
  --cmd node "$ctr"
buildah "${STORE[@]}" commit --quiet "$ctr" "$BASE" >/dev/null
echo "base $BASE: made locally (Debian bookworm, Node $("$NODE_BIN" --version), npm $(npm --version))"
