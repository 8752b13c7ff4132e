// Every limit keyed on a client address, and every log line, reads the one client address
// (request.clientAddress, or the resolver handed to oidc-provider): behind a trusted proxy the
// socket's address is the proxy's, and Koa's ctx.ip would believe any X-Forwarded-For.
// Only src/platform/client-address.ts reads the socket's address itself.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

const src = path.resolve(import.meta.dirname, '../../src');
const RESOLVER = 'platform/client-address.ts';
/** request.ip, request.ips, ctx.ip, socket.remoteAddress: each the socket's word (or a client's) for the address. */
const RAW_ADDRESS = /\b(?:request|req|ctx|raw)\.ips?\b|socket\??\.remoteAddress\b/;

test('only the client-address resolver reads a socket address or request.ip', async () => {
  const offenders: string[] = [];
  for (const entry of await readdir(src, { recursive: true })) {
    if (!entry.endsWith('.ts') || entry === RESOLVER || entry.startsWith('integrations/')) continue;
    const lines = (await readFile(path.join(src, entry), 'utf8')).split('\n');
    lines.forEach((line, i) => {
      if (RAW_ADDRESS.test(line.replace(/\/\/.*$/, ''))) offenders.push(`src/${entry}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(offenders, [], 'use request.clientAddress (or the ClientAddressOf given to oidc-provider)');
});
