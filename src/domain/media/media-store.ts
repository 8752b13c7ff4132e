import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
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
// A staged file this old belongs to an upload that died with its process.
const STALE_STAGING_MS = 60 * 60 * 1000;

function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`invalid media key ${JSON.stringify(key)}`);
  return key;
}

/** Files under `root` (e.g. `$DATA_DIR/media`): `root/<key>`, staged in `root/.staging`. */
export async function openDiskMediaStore(root: string): Promise<MediaStore> {
  const staging = path.join(root, STAGING_DIR);
  await mkdir(staging, { recursive: true, mode: 0o700 });
  await sweepStaleStaging(staging);

  return {
    async stage() {
      const file = path.join(staging, `${randomBytes(16).toString('hex')}.part`);
      const handle = await open(file, 'wx+', 0o600);
      return new DiskStagedMedia(root, file, handle);
    },
    async remove(key) {
      await rm(path.join(root, checkKey(key)), { force: true });
    },
  };
}

async function sweepStaleStaging(staging: string): Promise<void> {
  const cutoff = Date.now() - STALE_STAGING_MS;
  for (const name of await readdir(staging)) {
    const file = path.join(staging, name);
    const info = await stat(file).catch(() => undefined);
    if (info && info.mtimeMs < cutoff) await rm(file, { force: true });
  }
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
