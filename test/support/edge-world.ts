import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { sql } from 'kysely';
import { readKey, type TestApp } from './app.ts';
import { channel } from './content-world.ts';
import * as fx from './world.ts';
import { png } from './media-files.ts';
import { newClient, transport } from './mcp-client.ts';
import { api, authorize, exchangeCode, REDIRECT, registerClient } from './oauth-flow.ts';
import { createUser } from '../../src/domain/tenancy/tenancy.service.ts';

// The edge world, in a whole app on a real port: an authorised caller on every surface, for tests that probe
// the edges with many requests: a hub admin's OAuth token (main API and its MCP server), a Hub
// API key (Hub API and its MCP server), and at least two rows in every list so that each list
// issues a cursor. Start the app with rate limits lifted (many requests, one caller):
// `seedEdgeWorld(await startApp({ listen: true, limiter: 'unlimited' }))`.

export interface EdgeWorld {
  live: TestApp;
  /** A hub admin of hub h1 (all workspaces). */
  token: string;
  /** A read key of hub h1. */
  hubKey: string;
  /** GET/POST on the main API (path relative to BASE_URL) with the token. */
  main(path: string, init?: RequestInit): Promise<{ status: number; headers: Headers; body: any }>;
  /** GET on the Hub API (path under /v1/hub) with the key. */
  hub(path: string, init?: RequestInit): Promise<{ status: number; headers: Headers; body: any }>;
  /** Connected MCP clients: the main server (token) and the Hub API's (key). */
  mcpMain(): Promise<Client>;
  mcpHub(): Promise<Client>;
  /** Rows in each table, to show that a refused write changed nothing. */
  counts(tables: string[]): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/** Seeds the edge world into a listening app started with `limiter: 'unlimited'`. */
export async function seedEdgeWorld(live: TestApp): Promise<EdgeWorld> {
  const db = live.db;
  await fx.account(db, 'acc_1');
  await fx.hub(db, 'h1', 'acc_1');
  await fx.workspace(db, 'h1', 'w1', {});
  await fx.workspace(db, 'h1', 'w2', {});
  await fx.playbook(db, 'h1', 'p1');
  await fx.playbook(db, 'h1', 'p2');
  await fx.optIns(db, [
    { id: 'o1', hubId: 'h1', playbookId: 'p1', workspaceId: 'w1', status: 'active', optedInAt: '2026-11-01T09:00:00Z' },
    { id: 'o2', hubId: 'h1', playbookId: 'p2', workspaceId: 'w2', status: 'paused', optedInAt: '2026-11-02T09:00:00Z' },
  ]);
  await channel(db, 'h1', 'w1', 'ch_fb', 'facebook');
  await channel(db, 'h1', 'w1', 'ch_x', 'x');
  await createUser(db, {
    email: 'admin@acme.test',
    password: 'admin password 1',
    firstname: 'Ada',
    lastname: 'Min',
    hubId: 'h1',
    role: 'hub_admin',
  });
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  const tokenFor = async (resource?: string) =>
    (
      await exchangeCode(
        live,
        client,
        await authorize(live, client, {
          email: 'admin@acme.test',
          password: 'admin password 1',
          redirectUri: REDIRECT,
          ...(resource ? { resource } : {}),
        }),
        REDIRECT,
      )
    ).access_token;
  const token = await tokenFor();
  // Tokens are bound to one resource (RFC 8707): the MCP server needs its own.
  const mcpToken = await tokenFor(`${live.baseUrl}/mcp`);
  const hubKey = await readKey(db, 'h1');

  const main = (path: string, init?: RequestInit) => api(live, path, token, init);
  const hub = (path: string, init?: RequestInit) => api(live, `/v1/hub${path}`, hubKey, init);
  for (const n of [1, 2]) {
    const form = new FormData();
    form.append('workspaceId', 'w1');
    form.append('file', new Blob([png(8 * n, 8)], { type: 'image/png' }), `p${n}.png`);
    const uploaded = await main('/media', { method: 'POST', body: form });
    if (uploaded.status !== 201) throw new Error(`upload failed: ${JSON.stringify(uploaded.body)}`);
    const post = await main('/posts', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: `post ${n}`, workspaceId: 'w1', channelIds: ['ch_fb'], status: 'draft' }),
    });
    if (post.status !== 201) throw new Error(`post failed: ${JSON.stringify(post.body)}`);
  }
  const connect = async (url: string, bearer: string) => {
    const mcp = newClient();
    await mcp.connect(transport(new URL(url), { token: bearer }) as StreamableHTTPClientTransport);
    return mcp;
  };
  return {
    live,
    token,
    hubKey,
    main,
    hub,
    mcpMain: () => connect(`${live.baseUrl}/mcp`, mcpToken),
    mcpHub: () => connect(`${live.baseUrl}/v1/hub/mcp`, hubKey),
    counts: async (tables) => {
      const out: Record<string, number> = {};
      for (const table of tables)
        out[table] = Number((await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db.kysely)).rows[0]!.n);
      return out;
    },
    close: () => live.close(),
  };
}
