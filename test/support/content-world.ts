import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Db } from '../../src/db/database.ts';
import type { SocialPlatform } from '../../src/db/schema.ts';
import { openDiskMediaStore } from '../../src/domain/media/media-store.ts';
import { account, hub, workspace } from './world.ts';
import type { Clock } from '../../src/platform/clock.ts';
import { CursorKey } from '../../src/platform/cursor.ts';
import { Replayed, runOperation, type Operation } from '../../src/surfaces/operation.ts';
import { REPLAYED_HEADER } from '../../src/surfaces/rest.ts';
import { mainOperations } from '../../src/surfaces/main-api/operations.ts';
import type { MainContext } from '../../src/surfaces/main-api/context.ts';
import { InputValidator } from '../../src/surfaces/shared/inputs.ts';
import type { Caller } from '../../src/domain/caller.ts';
import type { MediaStore } from '../../src/domain/media/media-store.ts';
import { uploadMedia, type UploadDetails } from '../../src/domain/media/media.service.ts';
import type { MediaAsset } from '../../src/domain/media/media.ts';

// The content world (the main API's content): users and channels written straight to the tables,
// the content tests' hubs (seedTwoHubs, publishingHub), callers as the OAuth layer would resolve
// them, a disk media store in a temporary directory, and operations run as REST and MCP run them.
// Tenancy records (accounts, hubs, workspaces, opt-ins, spend): world.ts.

export async function user(db: Db, id: string, accountId = 'acc_1'): Promise<string> {
  await db.kysely
    .insertInto('users')
    .values({ id, account_id: accountId, email: `${id}@example.test`, password_hash: 'x', firstname: 'Test', lastname: id })
    .execute();
  return id;
}

/** The content tests' world: hubs hub_a (workspaces ws_a1, ws_a2) and hub_b (ws_b1), and four users. */
export async function seedTwoHubs(db: Db): Promise<void> {
  await account(db);
  await hub(db, 'hub_a');
  await hub(db, 'hub_b');
  await workspace(db, 'hub_a', 'ws_a1');
  await workspace(db, 'hub_a', 'ws_a2');
  await workspace(db, 'hub_b', 'ws_b1');
  for (const id of ['usr_a1', 'usr_a2', 'usr_admin', 'usr_b']) await user(db, id);
}

export function principal(hubId: string, workspaceId: string | null, userId: string, clientId = 'client_test'): Caller {
  return {
    user: { id: userId, email: `${userId}@example.test`, firstname: 'Test', lastname: userId, isStaff: false },
    account: { id: 'acc_1', plan: 'standard' },
    hub: { id: hubId, name: `Hub ${hubId}` },
    workspace: workspaceId === null ? null : { id: workspaceId, name: `Workspace ${workspaceId}` },
    role: workspaceId === null ? 'hub_admin' : 'member',
    clientId,
  };
}

/** A main API context that also records the headers a REST answer would carry (Idempotent-Replayed). */
export interface TestContext extends MainContext {
  headers: Record<string, string>;
}

export function caller(db: Db, clock: Clock, media: MediaStore, who: Caller, idempotencyKey?: string): TestContext {
  return { db, clock, media, caller: who, idempotencyKey, headers: {} };
}

/** A replay as REST answers it: the result, with Idempotent-Replayed: true recorded on the context. */
function answered(ctx: MainContext | TestContext, result: unknown): unknown {
  if (!(result instanceof Replayed)) return result;
  if ('headers' in ctx) ctx.headers[REPLAYED_HEADER] = 'true';
  return result.value;
}

export async function channel(
  db: Db,
  hubId: string,
  workspaceId: string,
  id: string,
  platform: SocialPlatform,
  connected = true,
): Promise<string> {
  await db.kysely
    .insertInto('social_channels')
    .values({ id, hub_id: hubId, workspace_id: workspaceId, platform, name: `${platform} ${id}`, handle: null, connected })
    .execute();
  return id;
}

/** The publisher tests' world: hub_a with ws_1..ws_3, each with a channel `ch_<w>_<platform>` per platform. */
export async function publishingHub(db: Db, platforms: SocialPlatform[]): Promise<void> {
  await account(db);
  await hub(db, 'hub_a');
  for (let w = 1; w <= 3; w++) {
    await workspace(db, 'hub_a', `ws_${w}`);
    for (const platform of platforms) await channel(db, 'hub_a', `ws_${w}`, `ch_${w}_${platform}`, platform);
  }
}

export interface TempMediaStore {
  store: MediaStore;
  root: string;
  /** Every file under the root (staging included), relative. */
  files(): Promise<string[]>;
  remove(): Promise<void>;
}

export async function tempMediaStore(): Promise<TempMediaStore> {
  const root = await mkdtemp(path.join(tmpdir(), 'hubops-media-'));
  const store = await openDiskMediaStore(root);
  return {
    store,
    root,
    files: async () =>
      (await readdir(root, { recursive: true, withFileTypes: true }))
        .filter((e) => e.isFile())
        .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
        .sort(),
    remove: () => rm(root, { recursive: true, force: true }),
  };
}

const byName = new Map(mainOperations.map((op) => [op.name, op as unknown as Operation<MainContext>]));
/** The validation an app would run, with a key of this process: a cursor `call` issued is accepted by `call`. */
const inputs = new InputValidator(new CursorKey(randomBytes(32)));

/** Runs a main API operation as REST and MCP do: the input validated by its schema, then the handler. */
export async function call(name: string, ctx: MainContext, input: Record<string, unknown> = {}): Promise<any> {
  const op = byName.get(name);
  if (!op) throw new Error(`no operation ${name}`);
  return answered(ctx, await runOperation(op, ctx, input, inputs));
}

/** Uploads through the media service as POST /media does: the asset, a replay recorded on the context. */
export async function upload(
  ctx: TestContext,
  content: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  details: UploadDetails,
): Promise<MediaAsset> {
  const { value, replayed } = await uploadMedia(ctx, ctx.caller, content, details, ctx.idempotencyKey);
  if (replayed) ctx.headers[REPLAYED_HEADER] = 'true';
  return value;
}
