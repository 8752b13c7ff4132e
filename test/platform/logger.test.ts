import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { redactUrl } from '../../src/config.ts';
import { chooseLogFormat, createLogger, formatPretty, redactQuery, requestLoggers, type LogFormat } from '../../src/platform/logger.ts';
import { startApp, type TestApp } from '../support/app.ts';

/** A logger as the server makes it, writing to `text` instead of stdout. */
function capture(format: LogFormat, level = 'info') {
  const state = { text: '' };
  const sink = new Writable({
    write: (chunk, _encoding, done) => {
      state.text += String(chunk);
      done();
    },
  });
  return {
    logger: createLogger({ level, format }, sink),
    get text() {
      return state.text;
    },
  };
}

const SECRETS = ['SECRET-EMBED-TOKEN', 'SECRET-BEARER', 'SECRET-COOKIE', 'SECRET-CODE', 'SECRET-STATE'];

test('credentials in query strings and connection strings are masked', () => {
  assert.equal(redactQuery('/embed/spend?token=abc.def&x=1'), '/embed/spend?token=[redacted]&x=1');
  assert.equal(redactQuery('/cb?code=xyz&state=s&password=p'), '/cb?code=[redacted]&state=[redacted]&password=[redacted]');
  // The Ad accounts chooser's handle to a held token, and the OAuth state of Connect Meta.
  assert.equal(
    redactQuery('/app/hubs/h/settings/ad-accounts/choose?pending=HANDLE'),
    '/app/hubs/h/settings/ad-accounts/choose?pending=[redacted]',
  );
  assert.equal(
    redactQuery('/app/ad-accounts/meta/callback?state=PAYLOAD.MAC&code=C'),
    '/app/ad-accounts/meta/callback?state=[redacted]&code=[redacted]',
  );
  assert.equal(redactQuery('/v1/hub/playbook-opt-ins?limit=5'), '/v1/hub/playbook-opt-ins?limit=5');
  assert.equal(redactQuery('/app/hubs/h/settings/api?created=FORM-TOKEN'), '/app/hubs/h/settings/api?created=[redacted]');
  // The connection string logged at start-up (main.ts) keeps the user, never the password.
  assert.equal(
    redactUrl('postgres://hubops:s3cretPW@db.internal:5432/hubops?sslmode=require'),
    'postgres://hubops:***@db.internal:5432/hubops?sslmode=require',
  );
  assert.equal(
    redactUrl('postgres://db.internal/hubops?user=app&password=s3cretPW'),
    'postgres://db.internal/hubops?user=app&password=[redacted]',
  );
  for (const awkward of [
    'postgres://app:p@ss@db.internal/hubops',
    'postgres://app:pa/ss@db.internal/hubops',
    'postgres://app:p%40ss@db.internal/hubops',
  ]) {
    const shown = redactUrl(awkward);
    assert.ok(!/ss@/.test(shown) && shown.includes('app:***@'), shown);
  }
});

test('a database error in a log line keeps its code and constraint but not the row it quotes', () => {
  for (const format of ['json', 'pretty'] as const) {
    const log = capture(format);
    const error = Object.assign(new Error('new row for relation "posts" violates check constraint "posts_check2"'), {
      code: '23514',
      constraint: 'posts_check2',
      table: 'posts',
      detail: 'Failing row contains (p_1, hub_a, SECRET-POST-TEXT, publishing).',
      where: 'SQL statement "UPDATE posts SET text = SECRET-POST-TEXT"',
    });
    log.logger.warn({ err: error }, 'publisher round failed');
    assert.ok(!log.text.includes('SECRET-POST-TEXT'), `${format}: ${log.text}`);
    assert.match(log.text, /posts_check2/, format);
    if (format === 'json') assert.equal(JSON.parse(log.text).err.code, '23514');
  }
});

test('a request object in a log line (Fastify logs one with a failed response) shows its URL masked, never its headers', () => {
  for (const format of ['json', 'pretty'] as const) {
    const log = capture(format);
    log.logger.warn(
      {
        req: {
          method: 'GET',
          url: '/embed/spend?token=SECRET-EMBED-TOKEN',
          ip: '127.0.0.1',
          id: 'r1',
          headers: { authorization: 'Bearer SECRET-BEARER', cookie: 'SECRET-COOKIE' },
        },
      },
      'response failed',
    );
    assert.match(log.text, /\/embed\/spend\?token=\[redacted\]/, format);
    for (const secret of SECRETS) assert.ok(!log.text.includes(secret), `${format}: ${secret}`);
  }
});

test("a request's logger writes what pino's child would, byte for byte, and becomes one only for a line that is written", () => {
  const withoutTime = (text: string) => text.replace(/"time":\d+/g, '"time":0');
  for (const level of ['info', 'warn'] as const) {
    const eager = capture('json', level);
    const lazy = capture('json', level);
    let made = 0;
    const parent = lazy.logger;
    // Counts the children made of the parent itself (pino's children inherit this method).
    const child = parent.child;
    parent.child = function (this: typeof parent, ...args: Parameters<typeof child>) {
      if (this === parent) made++;
      return child.apply(this, args);
    } as typeof parent.child;
    const a = eager.logger.child({ reqId: 'r-1' }, {});
    const b = requestLoggers(parent, { reqId: 'r-1' }, {});
    assert.equal(b.level, level);
    for (const log of [a, b]) {
      log.debug({ at: 'debug' }, 'never written');
      log.info({ method: 'GET', url: '/v1/hub', statusCode: 304 }, 'request');
    }
    // At warn nothing was written: no child was made. At info the request line made one.
    assert.equal(made, level === 'info' ? 1 : 0, level);
    assert.equal(withoutTime(lazy.text), withoutTime(eager.text), level);
    for (const log of [a, b]) {
      log.warn({ headers: { authorization: 'Bearer SECRET-BEARER' } }, 'a warning');
      log.child({ component: 'x' }).error(new Error('failed'), 'an error');
    }
    assert.equal(made, 1, 'made once, then reused');
    assert.equal(withoutTime(lazy.text), withoutTime(eager.text), level);
    assert.match(lazy.text, /"reqId":"r-1".*"msg":"a warning"/);
    assert.match(lazy.text, /"reqId":"r-1","component":"x".*"msg":"an error"/);
    assert.ok(!lazy.text.includes('SECRET-BEARER'));
  }
});

test("a request whose route sets its own logLevel writes the lines of that level, as pino's child would", () => {
  const parent = capture('json', 'info');
  const log = requestLoggers(parent.logger, { reqId: 'r-2' }, { level: 'debug' });
  assert.equal(log.level, 'debug');
  log.debug({ at: 'debug' }, 'written at the route level');
  assert.match(parent.text, /"reqId":"r-2".*"msg":"written at the route level"/);
  const quieter = requestLoggers(parent.logger, { reqId: 'r-3' }, { level: 'warn' });
  quieter.info('not written above the route level');
  assert.doesNotMatch(parent.text, /not written/);
});

test('the format: LOG_FORMAT when set, else pretty on a terminal and JSON otherwise', () => {
  assert.equal(chooseLogFormat(undefined, true), 'pretty');
  assert.equal(chooseLogFormat(undefined, false), 'json');
  assert.equal(chooseLogFormat('json', true), 'json');
  assert.equal(chooseLogFormat('pretty', false), 'pretty');
});

describe('the pretty format', () => {
  const time = Date.UTC(2026, 10, 24, 17, 2, 55, 120);
  const clock = new Date(time).toTimeString().slice(0, 8);

  test('a request: time, method, path, status, duration and request id on one line', () => {
    const line = formatPretty({
      level: 30,
      time,
      pid: 1,
      hostname: 'h',
      reqId: 'req-1',
      method: 'GET',
      url: '/v1/hub/opt-in-summary?limit=5',
      statusCode: 200,
      responseTime: 3.14,
      msg: 'request',
    });
    assert.equal(line, `${clock} GET /v1/hub/opt-in-summary?limit=5 200 3.1 ms req=req-1\n`);
  });

  test('a long query value (a cursor) is cut to its start; a failed request names its level', () => {
    const cursor = 'eyJ2IjoxLCJrIjpbIjIwMjYtMTEtMjQiXX0.c2lnbmF0dXJl';
    const line = formatPretty({
      level: 50,
      time,
      reqId: 'r',
      method: 'GET',
      url: `/v1/hub/playbook-opt-ins?cursor=${cursor}&limit=2`,
      statusCode: 500,
      responseTime: 12,
    });
    assert.equal(line, `${clock} ERROR GET /v1/hub/playbook-opt-ins?cursor=eyJ2IjoxLCJrI…&limit=2 500 12.0 ms req=r\n`);
  });

  test('other lines: level, message, fields and the error message; the stack only when asked', () => {
    const err = {
      type: 'Error',
      message: 'connect ECONNREFUSED 127.0.0.1:6379',
      stack: 'Error: connect ECONNREFUSED\n    at x (y.ts:1:1)',
    };
    const line = { level: 40, time, pid: 1, hostname: 'h', msg: 'Redis not reachable yet', attempt: 2, url: 'redis://r', err };
    assert.equal(
      formatPretty(line),
      `${clock} WARN Redis not reachable yet attempt=2 url=redis://r err="connect ECONNREFUSED 127.0.0.1:6379"\n`,
    );
    assert.match(
      formatPretty(line, { stacks: true }),
      /err="connect ECONNREFUSED 127\.0\.0\.1:6379"\n {4}Error: connect ECONNREFUSED\n {8}at x/,
    );
    assert.equal(
      formatPretty({ level: 30, time, msg: 'database ready', database: 'embedded (./data/postgres)', applied: [] }),
      `${clock} INFO database ready database="embedded (./data/postgres)" applied=[]\n`,
    );
  });
});

describe('one line per request, in both formats', () => {
  const apps: Partial<Record<LogFormat, { t: TestApp; log: ReturnType<typeof capture> }>> = {};
  before(async () => {
    for (const format of ['json', 'pretty'] as const) {
      const log = capture(format);
      apps[format] = { t: await startApp({ logger: log.logger }), log };
    }
  });
  after(async () => {
    for (const app of Object.values(apps)) await app.t.close();
  });

  /** Sends the same requests to the app logging in `format`; returns what it logged meanwhile. */
  async function serve(format: LogFormat): Promise<{ text: string; requestIds: string[] }> {
    const { t, log } = apps[format]!;
    const start = log.text.length;
    const requestIds: string[] = [];
    for (const request of [
      { url: '/healthz' },
      { url: '/readyz' },
      { url: '/healthz/' },
      {
        url: '/embed/spend?token=SECRET-EMBED-TOKEN',
        headers: { authorization: 'Bearer SECRET-BEARER', cookie: 'hubops_app=SECRET-COOKIE' },
      },
      { url: '/v1/hub/opt-in-summary', headers: { authorization: 'Bearer SECRET-BEARER' } },
      { url: '/oauth/callback?code=SECRET-CODE&state=SECRET-STATE' },
    ]) {
      const response = await t.app.fastify.inject({ method: 'GET', ...request });
      if (!request.url.startsWith('/healthz') && !request.url.startsWith('/readyz'))
        requestIds.push(String(response.headers['x-request-id']));
    }
    return { text: log.text.slice(start), requestIds };
  }

  test('JSON: one line per request with method, masked path, status, time and request id; none for health checks', async () => {
    const { text, requestIds } = await serve('json');
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const requests = lines.filter((l) => l.msg === 'request');
    assert.deepEqual(
      requests.map((l) => l.reqId),
      requestIds,
      text,
    );
    assert.deepEqual(
      requests.map((l) => l.url),
      ['/embed/spend?token=[redacted]', '/v1/hub/opt-in-summary', '/oauth/callback?code=[redacted]&state=[redacted]'],
    );
    assert.deepEqual(
      requests.map((l) => l.statusCode),
      [401, 401, 404],
    );
    for (const line of requests) {
      assert.equal(line.method, 'GET');
      assert.equal(typeof line.responseTime, 'number');
      assert.equal(line.remoteAddress, '127.0.0.1', "the client's address (inject's)");
    }
    assert.ok(!lines.some((l) => String(l.url).includes('healthz') || String(l.url).includes('readyz')), 'health checks are not logged');
    assert.ok(!lines.some((l) => l.msg === 'incoming request' || l.msg === 'request completed'), "Fastify's own request lines are off");
    for (const secret of SECRETS) assert.ok(!text.includes(secret), secret);
  });

  test('signed out at the Meta OAuth callback: the way to sign-in and back logs neither the code nor the state', async () => {
    for (const format of ['json', 'pretty'] as const) {
      const { t, log } = apps[format]!;
      const start = log.text.length;
      const callback = await t.app.fastify.inject({
        method: 'GET',
        url: '/app/ad-accounts/meta/callback?code=SECRET-CODE&state=SECRET-STATE',
      });
      assert.equal(callback.statusCode, 303);
      const location = String(callback.headers.location);
      assert.equal(location, `/app/sign-in?next=${encodeURIComponent('/app/ad-accounts/meta/callback')}`);
      assert.equal((await t.app.fastify.inject({ method: 'GET', url: location })).statusCode, 200);
      const text = log.text.slice(start);
      assert.match(text, /sign-in/, format);
      for (const secret of SECRETS) assert.ok(!text.includes(secret), `${format}: ${secret}`);
    }
  });

  test('pretty: the same lines for a person, secrets masked alike', async () => {
    const { text, requestIds } = await serve('pretty');
    const lines = text.trim().split('\n');
    assert.equal(lines.length, 3, text);
    assert.match(
      lines[0]!,
      new RegExp(
        `^\\d\\d:\\d\\d:\\d\\d GET /embed/spend\\?token=\\[redacted\\] 401 \\d+\\.\\d ms from 127\\.0\\.0\\.1 req=${requestIds[0]}$`,
      ),
    );
    assert.match(lines[2]!, /GET \/oauth\/callback\?code=\[redacted\]&state=\[redacted\] 404 /);
    for (const secret of SECRETS) assert.ok(!text.includes(secret), secret);
  });
});
