import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, rmdir, stat, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { ownProcessMark, processRunning } from '../../platform/process.ts';
import type { ByteSource } from './media-info.ts';

/**
 * Where media bytes live (disk now; an object store later). An upload is staged first, inspected
 * through random access, and only then committed under its final key in one atomic step, so a
 * reader never sees a partial file and a crash mid-upload leaves nothing under any key.
 */
export interface MediaStore {
  stage(): Promise<StagedMedia>;
  /** Removes a committed object (used when its database row could not be written). */
  remove(key: string): Promise<void>;
  /** A committed object's bytes as a stream with their length, or undefined when there is none. */
  read(key: string): Promise<{ size: number; stream: Readable } | undefined>;
  /** Stops the store's housekeeping and drops this process's staging (call after the last upload). */
  close(): Promise<void>;
}

export interface StagedMedia extends ByteSource {
  /** Appends bytes; `size` grows with them. */
  write(chunk: Uint8Array): Promise<void>;
  /** Makes the staged bytes the object `key`, durably and atomically. */
  commit(key: string): Promise<void>;
  /** Drops the staged bytes; a no-op after commit or a previous discard. */
  discard(): Promise<void>;
}

/** Keys are relative paths of safe segments, e.g. `hub_1/ws_1/med_abc.png`. */
const KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*\/[A-Za-z0-9_-]+\.[a-z0-9]+$/;
const STAGING_DIR = '.staging';
// Staging whose owner cannot be told (another host's, or from before per-process directories)
// is removed only once this old: no upload takes an hour.
const STALE_STAGING_MS = 60 * 60 * 1000;
const SWEEP_EVERY_MS = 60_000;

function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`invalid media key ${JSON.stringify(key)}`);
  return key;
}

// Each process stages in a directory of its own named `<host>-<pid>-<start>`: the host (a hash of
// its name) and the process's start time tell a directory whose process is gone from one whose
// pid was reused, so a crashed process's staging can be removed at once, whatever its age.
const HOST = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
const OWNED = /^([0-9a-f]{8})-(\d+-\w+)$/;

/** Whether a staging directory's process still runs: true, false, or undefined (cannot tell). */
async function ownerAlive(name: string): Promise<boolean | undefined> {
  const match = OWNED.exec(name);
  if (!match || match[1] !== HOST) return undefined;
  return processRunning(match[2]!);
}

export interface DiskMediaStoreOptions {
  /** How often staging left by dead processes is swept; default one minute. */
  sweepEveryMs?: number;
}

/** Files under `root` (e.g. `$DATA_DIR/media`): `root/<key>`, staged in `root/.staging/<process>`. */
export async function openDiskMediaStore(root: string, options: DiskMediaStoreOptions = {}): Promise<MediaStore> {
  const staging = path.join(root, STAGING_DIR);
  const own = `${HOST}-${await ownProcessMark()}`;
  const mine = path.join(staging, own);
  await mkdir(mine, { recursive: true, mode: 0o700 });
  await sweepStaging(staging, own);
  let sweeping: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    sweeping = sweepStaging(staging, own).catch(() => {}); // the next sweep tries again
  }, options.sweepEveryMs ?? SWEEP_EVERY_MS);
  timer.unref();
  let closed = false;

  return {
    async stage() {
      if (closed) throw new Error('the media store is closed');
      const file = path.join(mine, `${randomBytes(16).toString('hex')}.part`);
      const handle = await open(file, 'wx+', 0o600);
      return new DiskStagedMedia(root, file, handle);
    },
    async remove(key) {
      await rm(path.join(root, checkKey(key)), { force: true });
    },
    async read(key) {
      let handle: FileHandle;
      try {
        handle = await open(path.join(root, checkKey(key)), 'r');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
      // Length from the open file, so the stream and Content-Length describe the same bytes.
      const { size } = await handle.stat();
      return { size, stream: handle.createReadStream() };
    },
    async close() {
      closed = true;
      clearInterval(timer);
      await sweeping;
      await rm(mine, { recursive: true, force: true });
    },
  };
}

/** Removes the staging of processes that are gone, and unowned staging older than an hour. */
async function sweepStaging(staging: string, own: string): Promise<void> {
  const cutoff = Date.now() - STALE_STAGING_MS;
  for (const entry of await readdir(staging, { withFileTypes: true })) {
    if (entry.name === own) continue;
    const target = path.join(staging, entry.name);
    const alive = entry.isDirectory() ? await ownerAlive(entry.name) : undefined;
    if (alive === false) {
      await rm(target, { recursive: true, force: true });
    } else if (alive === undefined) {
      await removeOlderThan(target, cutoff);
    }
  }
}

/** A file older than `cutoff`, or a directory's files that are (and then the directory if empty). */
async function removeOlderThan(target: string, cutoff: number): Promise<void> {
  const info = await stat(target).catch(() => undefined);
  if (!info) return;
  if (!info.isDirectory()) {
    if (info.mtimeMs < cutoff) await rm(target, { force: true });
    return;
  }
  for (const name of await readdir(target).catch(() => [])) await removeOlderThan(path.join(target, name), cutoff);
  // rmdir, not rm -r: it fails if an upload has just begun staging there.
  if (info.mtimeMs < cutoff) await rmdir(target).catch(() => {});
}

class DiskStagedMedia implements StagedMedia {
  readonly #root: string;
  readonly #file: string;
  #handle: FileHandle | undefined;
  #size = 0;
  #settled = false;

  constructor(root: string, file: string, handle: FileHandle) {
    this.#root = root;
    this.#file = file;
    this.#handle = handle;
  }

  get size(): number {
    return this.#size;
  }

  #open(): FileHandle {
    if (!this.#handle) throw new Error('staged media is already committed or discarded');
    return this.#handle;
  }

  async write(chunk: Uint8Array): Promise<void> {
    const handle = this.#open();
    let written = 0;
    while (written < chunk.length) {
      const { bytesWritten } = await handle.write(chunk, written, chunk.length - written, this.#size + written);
      written += bytesWritten;
    }
    this.#size += chunk.length;
  }

  async read(offset: number, length: number): Promise<Buffer> {
    const wanted = Math.max(0, Math.min(length, this.#size - offset));
    const buffer = Buffer.alloc(wanted);
    let got = 0;
    while (got < wanted) {
      const { bytesRead } = await this.#open().read(buffer, got, wanted - got, offset + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buffer.subarray(0, got);
  }

  async commit(key: string): Promise<void> {
    const target = path.join(this.#root, checkKey(key));
    const handle = this.#open();
    // Durable before visible: the bytes reach the disk, then the rename publishes them whole.
    await handle.sync();
    await handle.close();
    this.#handle = undefined;
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    await rename(this.#file, target);
    this.#settled = true;
  }

  async discard(): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    const handle = this.#handle;
    this.#handle = undefined;
    await handle?.close().catch(() => {});
    await rm(this.#file, { force: true });
  }
}
