#!/usr/bin/env bash
# Builds the image from the Containerfile with buildah and starts it (CI runs this from .ci/run):
# the server as the image's CMD, as the image's user, on the embedded PostgreSQL in its DATA_DIR;
# then the image's HEALTHCHECK command, a Hub API key made with the image's CLI and a request with
# it, and a SIGTERM that must end the server with exit status 0 and its "stopped" log line.
# No Docker engine here: `buildah run --isolation chroot` shares the machine's network and process
# namespace, so the server is reached on 127.0.0.1 and signalled by its pid (docs/operations.md
# names what this cannot check).
set -euo pipefail
cd "$(dirname "$0")/.."
STORE=(--storage-driver vfs)
IMAGE=localhost/hubops:smoke
WORK=$(mktemp -d /tmp/hubops-image-smoke-XXXXXX)
ctr=""
server=""
seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

missing=()
command -v buildah >/dev/null || missing+=(buildah)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v docker-compose >/dev/null || missing+=(docker-compose)
if ((${#missing[@]})); then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; fi

cleanup() {
  if [[ -n $server ]] && kill -0 "$server" 2>/dev/null; then kill -KILL "$server" 2>/dev/null || true; fi
  [[ -n $ctr ]] && buildah "${STORE[@]}" rm "$ctr" >/dev/null 2>&1 || true
  buildah "${STORE[@]}" rmi "$IMAGE" >/dev/null 2>&1 || true
  buildah "${STORE[@]}" rmi --prune >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "image smoke: FAIL: $*" >&2
  [[ -f $WORK/server.log ]] && { echo "--- server output" >&2; tail -n 40 "$WORK/server.log" >&2; }
  exit 1
}

# compose.yaml against Compose's schema (no engine here to start it), with and without the profile.
HUBOPS_SECRETS_KEY=smoke docker-compose -f compose.yaml config -q || fail "compose.yaml is not valid"
HUBOPS_SECRETS_KEY=smoke docker-compose -f compose.yaml --profile scale-out config --services | grep -qx hubops-2 ||
  fail "compose.yaml has no hubops-2 in the scale-out profile"
echo "image smoke: compose.yaml is valid (docker-compose $(docker-compose version --short))"

t0=$(seconds)
bash scripts/image-base.sh
t1=$(seconds)
# Docker's format: the OCI image config has no HEALTHCHECK.
buildah "${STORE[@]}" build --quiet --format docker --isolation chroot --layers=false -f Containerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 ||
  { tail -n 30 "$WORK/build.log" >&2; fail "the build failed"; }
t2=$(seconds)
echo "image smoke: base $(elapsed "$t0" "$t1") s, build $(elapsed "$t1" "$t2") s"

# The image's own CMD, HEALTHCHECK and user, read from its config: the smoke runs what was built.
buildah "${STORE[@]}" inspect --type image "$IMAGE" >"$WORK/inspect.json"
config() { node_modules/.bin/node -e "const c = JSON.parse(require('fs').readFileSync('$WORK/inspect.json', 'utf8')).Docker.config; $1"; }
mapfile -d '' cmd < <(config 'process.stdout.write(c.Cmd.join("\0") + "\0")')
mapfile -d '' check < <(config 'process.stdout.write(c.Healthcheck.Test.slice(1).join("\0") + "\0")')
[[ $(config 'process.stdout.write(c.User)') == node ]] || fail "the image does not run as the user node"
[[ $(config 'process.stdout.write(c.Healthcheck.Test[0])') == CMD ]] || fail "no HEALTHCHECK in the image"

ctr=$(buildah "${STORE[@]}" from --pull-never --name "hubops-smoke-$$" "$IMAGE")
port=$(node_modules/.bin/node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
run() { buildah "${STORE[@]}" run --isolation chroot --env "PORT=$port" "$ctr" -- "$@"; }

descendants() { local p; for p in $(pgrep -P "$1"); do echo "$p"; descendants "$p"; done; }
find_server() {
  server=""
  for _ in $(seq 1 200); do
    for p in $(descendants "$runner"); do
      if [[ $(cat "/proc/$p/comm" 2>/dev/null) == node ]] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -q 'src/main\.ts'; then server=$p && break; fi
    done
    [[ -n $server ]] && break
    sleep 0.1
  done
  [[ -n $server ]] || fail "no server process started"
}

t3=$(seconds)
run "${cmd[@]}" >"$WORK/server.log" 2>&1 &
runner=$!
# The server: the node process below the runner that runs src/main.ts (chroot isolation: the
# machine's pid namespace, so it is signalled by its pid here, as a runtime signals PID 1).
find_server
[[ $(ps -o user= -p "$server" | tr -d ' ') != root ]] || fail "the server runs as root"
ready=""
for _ in $(seq 1 240); do
  kill -0 "$runner" 2>/dev/null || fail "the server exited before it was ready"
  # Ready, and done starting (the banner): src/main.ts handles SIGTERM from then on.
  if curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && grep -q 'hubops is running' "$WORK/server.log"; then ready=1 && break; fi
  sleep 0.5
done
[[ -n $ready ]] || fail "/readyz did not answer 200 within 120 s"
t4=$(seconds)
echo "image smoke: ready after $(elapsed "$t3" "$t4") s (embedded PostgreSQL, first start, demo seeded)"

run "${check[@]}" || fail "the image's HEALTHCHECK command failed"
echo "image smoke: HEALTHCHECK command passes"

key=$(run hubops keys create --hub hub_demo_brewline --name "image smoke" --json | node_modules/.bin/node -e 'let t = ""; process.stdin.on("data", (d) => (t += d)).on("end", () => console.log(JSON.parse(t).key))') ||
  fail "hubops keys create in the image failed"
status=$(curl -sS -o "$WORK/summary.json" -w '%{http_code}' -H "Authorization: Bearer $key" "http://127.0.0.1:$port/v1/hub/opt-in-summary")
[[ $status == 200 ]] || fail "Hub API with the new key: HTTP $status $(head -c 300 "$WORK/summary.json")"
status=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/hub/opt-in-summary")
[[ $status == 401 ]] || fail "Hub API without a key: HTTP $status, expected 401"
echo "image smoke: Hub API answers 200 with a key made by the image's CLI, 401 without"

t5=$(seconds)
kill -TERM "$server"
code=0
wait "$runner" || code=$?
t6=$(seconds)
[[ $code == 0 ]] || fail "after SIGTERM the server exited with status $code"
grep -q '"msg":"stopped"' "$WORK/server.log" || fail "no \"stopped\" log line after SIGTERM"
grep -q '"exitCode":0' "$WORK/server.log" || fail "the stop was not clean"
echo "image smoke: SIGTERM stopped the server in $(elapsed "$t5" "$t6") s, exit status 0"

# As compose.yaml runs it: the machine's PostgreSQL (a new database) and Redis, a secrets key in
# the environment, the demo seeded into it.
db=hubops_image_smoke_$$
psql -q -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE $db" || fail "cannot create the database $db"
dropdb() { psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true; }
trap 'dropdb; cleanup' EXIT
secrets_key=$(openssl rand -base64 32 | tr '+/' '-_' | tr -d '=')
server=""
buildah "${STORE[@]}" run --isolation chroot --env "PORT=$port" --env "DATABASE_URL=postgres://postgres@127.0.0.1:5432/$db" \
  --env REDIS_URL=redis://127.0.0.1:6379 --env "HUBOPS_SECRETS_KEY=$secrets_key" --env HUBOPS_DEMO=1 --env HUBOPS_SPEND_SYNC=0 \
  "$ctr" -- "${cmd[@]}" >"$WORK/server.log" 2>&1 &
runner=$!
t7=$(seconds)
find_server
ready=""
for _ in $(seq 1 240); do
  kill -0 "$runner" 2>/dev/null || fail "the server (external PostgreSQL) exited before it was ready"
  # Ready, and done starting (the banner): src/main.ts handles SIGTERM from then on.
  if curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && grep -q 'hubops is running' "$WORK/server.log"; then ready=1 && break; fi
  sleep 0.5
done
[[ -n $ready ]] || fail "/readyz (external PostgreSQL) did not answer 200 within 120 s"
t8=$(seconds)
kill -TERM "$server"
code=0
wait "$runner" || code=$?
[[ $code == 0 ]] || fail "after SIGTERM the server (external PostgreSQL) exited with status $code"
echo "image smoke: with DATABASE_URL, REDIS_URL and HUBOPS_SECRETS_KEY: ready after $(elapsed "$t7" "$t8") s, stopped with exit status 0"
t6=$(seconds)
echo "image smoke: passed in $(elapsed "$t0" "$t6") s"
