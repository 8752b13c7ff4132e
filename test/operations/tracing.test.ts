// OpenTelemetry traces sent to a local OTLP/HTTP receiver (JSON): a Hub API request's server span,
// a child of the caller's traceparent, with its database statements as child spans; a spend sync
// run with its statements and its calls to the Meta sandbox; the request's log line carrying the
// trace id; and no secret in any attribute (the key, the platform token, query strings, SQL values).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { connectAdAccounts } from '../../src/domain/ad-sync/ad-account.service.ts';
import { createSpendSyncLoop } from '../../src/domain/ad-sync/sync-loop.ts';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import { startMetaSandbox, type MetaSandbox } from '../../src/integrations/meta/sandbox.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { startTracing } from '../../src/platform/tracing.ts';
import { startApp, type TestApp } from '../support/app.ts';
import * as fx from '../support/world.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number };
}

/** A minimal OTLP/HTTP receiver on loopback: every JSON export request it gets, kept. */
async function startReceiver() {
  const bodies: string[] = [];
  const contentTypes: string[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      contentTypes.push(String(request.headers['content-type']));
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    contentTypes,
    spans(): (OtlpSpan & { service: string })[] {
      return bodies.flatMap((body) =>
        (JSON.parse(body).resourceSpans as any[]).flatMap((rs) => {
          const service = rs.resource.attributes.find((a: any) => a.key === 'service.name')?.value.stringValue;
          return (rs.scopeSpans as any[]).flatMap((ss) => (ss.spans as OtlpSpan[]).map((s) => ({ ...s, service })));
        }),
      );
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const attr = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : (value.stringValue ?? (value.intValue === undefined ? undefined : Number(value.intValue)));
};

let receiver: Awaited<ReturnType<typeof startReceiver>>;
let tracing: Awaited<ReturnType<typeof startTracing>>;
let sandbox: MetaSandbox;
let t: TestApp;
let logs = '';

before(async () => {
  receiver = await startReceiver();
  // Before the database is opened: its pool is traced only if tracing is on when it is made.
  tracing = await startTracing({ url: `${receiver.url}/v1/traces`, serviceName: 'hubops-test', sampleRatio: 1, version: 'test' });
  sandbox = await startMetaSandbox({ seed: { accounts: [{ id: 'act_7001', name: 'Traced', timezone_name: 'UTC' }], historyDays: 3 } });
  const sink = new Writable({
    write: (chunk, _encoding, done) => {
      logs += String(chunk);
      done();
    },
  });
  t = await startApp({ env: { META_GRAPH_URL: sandbox.url }, logger: createLogger({ level: 'info', format: 'json' }, sink) });
  await fx.account(t.db, 'acc_1');
  await fx.hub(t.db, 'h1', 'acc_1');
  await fx.workspace(t.db, 'h1', 'w1');
  await fx.playbook(t.db, 'h1', 'p1');
  await fx.optIns(t.db, [{ id: 'oi_1', hubId: 'h1', playbookId: 'p1', workspaceId: 'w1', optedInAt: '2026-11-20T10:00:00Z' }]);
});
after(async () => {
  await t?.close();
  await sandbox?.close();
  await tracing?.shutdown();
  await receiver?.close();
});

test('a Hub API request is a server span under the caller’s traceparent, its statements child spans; its log line has the trace id; no secret anywhere', async () => {
  const { key } = await createKey(t.db, { hubId: 'h1', name: 'traced' });
  const parentTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const parentSpan = '00f067aa0ba902b7';
  const answer = await t.hubGet('/playbook-opt-ins?limit=5&token=SECRETQUERY', key, { traceparent: `00-${parentTrace}-${parentSpan}-01` });
  assert.equal(answer.status, 200);
  await tracing.flush();
  const spans = receiver.spans();
  assert.ok(
    receiver.contentTypes.every((type) => type.startsWith('application/json')),
    'OTLP/HTTP JSON',
  );
  const server = spans.find((s) => s.name === 'GET /v1/hub/playbook-opt-ins');
  assert.ok(server, `no server span among ${spans.map((s) => s.name).join(', ')}`);
  assert.equal(server.service, 'hubops-test');
  assert.equal(server.traceId, parentTrace, 'the caller’s trace');
  assert.equal(server.parentSpanId, parentSpan, 'a child of the caller’s span');
  assert.equal(server.kind, 2, 'SERVER');
  assert.equal(attr(server, 'http.route'), '/v1/hub/playbook-opt-ins');
  assert.equal(attr(server, 'http.request.method'), 'GET');
  assert.equal(attr(server, 'http.response.status_code'), 200);
  const queries = spans.filter((s) => s.parentSpanId === server.spanId);
  assert.ok(queries.length >= 1, 'the request’s statements are its children');
  for (const query of queries) {
    assert.equal(attr(query, 'db.system.name'), 'postgresql');
    assert.equal(query.kind, 3, 'CLIENT');
    assert.match(String(attr(query, 'db.query.text')), /^\s*(select|with|update|insert|start|begin|commit|rollback)\b/i);
  }
  assert.ok(
    queries.some((q) => /\$1/.test(String(attr(q, 'db.query.text')))),
    'statements keep their placeholders: the values are never recorded',
  );
  const line = logs
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((l) => l.msg === 'request' && String(l.url).startsWith('/v1/hub/playbook-opt-ins'));
  assert.ok(line, 'the request line');
  assert.equal(line.trace_id, parentTrace);
  assert.equal(line.span_id, server.spanId);
  const everything = receiver.bodies.join('\n');
  // The key (whole or its secret part), the query string, and the hub id, which is a statement's parameter.
  for (const secret of [key, key.slice(7), 'SECRETQUERY', 'limit=5', "'h1'", '"h1"']) assert.ok(!everything.includes(secret), secret);
});

test('a spend sync run is a trace: its statements and its calls to the platform (host and path only, no token) are its children', async () => {
  const token = sandbox.issueToken({ accounts: ['act_7001'], systemUser: true });
  await connectAdAccounts(t.app.adSync, 'h1', {
    platform: 'meta',
    kind: 'system_user',
    accessToken: token,
    tokenExpiresAt: null,
    externalIds: ['act_7001'],
    label: 'traced',
  });
  const loop = createSpendSyncLoop({ deps: t.app.adSync, intervalMs: 60_000, batchSize: 1 });
  const outcomes = await loop.runOnce();
  assert.equal(outcomes.length, 1);
  assert.equal(outcomes[0]!.status, 'done', JSON.stringify(outcomes[0]));
  await tracing.flush();
  const spans = receiver.spans();
  const run = spans.find((s) => s.name === 'spend-sync account');
  assert.ok(run, 'the run’s span');
  const children = spans.filter((s) => s.traceId === run.traceId && s.spanId !== run.spanId);
  const calls = children.filter((s) => attr(s, 'hubops.platform') === 'meta');
  assert.ok(calls.length >= 1, 'calls to Meta');
  const sandboxUrl = new URL(sandbox.url);
  for (const call of calls) {
    assert.equal(call.kind, 3, 'CLIENT');
    assert.equal(attr(call, 'server.address'), sandboxUrl.hostname);
    assert.equal(attr(call, 'server.port'), Number(sandboxUrl.port));
    assert.match(String(attr(call, 'url.path')), /^\/v\d+\.\d+\//);
    assert.ok(!String(attr(call, 'url.path')).includes('?'));
    assert.equal(typeof attr(call, 'http.response.status_code'), 'number');
  }
  assert.ok(
    children.some((s) => attr(s, 'db.system.name') === 'postgresql'),
    'the run’s statements',
  );
  const everything = receiver.bodies.join('\n');
  assert.ok(!everything.includes(token), 'the platform token');
  assert.ok(!/authorization/i.test(everything), 'no header');
});
