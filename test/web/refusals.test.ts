// Refusals of the web admin in its own words: the opt-in report's date range, and a domain
// refusal on an embed URL (not about the token, so not "malformed").
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Fastify from 'fastify';
import { createKey } from '../../src/domain/api-keys/api-key.service.ts';
import type { SpendReportCache } from '../../src/domain/spend/spend.service.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { DomainError } from '../../src/platform/errors.ts';
import { MemoryRateLimiter } from '../../src/platform/rate-limit.ts';
import { signEmbedToken } from '../../src/surfaces/web/embed-token.ts';
import { createReportCaches } from '../../src/surfaces/shared/report-caches.ts';
import { webPlugin } from '../../src/surfaces/web/plugin.ts';
import { startApp, type TestApp } from '../support/app.ts';
import { captureLog } from '../support/log.ts';
import { Browser } from '../support/oauth-flow.ts';
import { ADMIN, HUB, seedWebHub } from '../support/world.ts';
import { hidden } from '../support/web-forms.ts';

let web: TestApp;
before(async () => {
  web = await startApp({ listen: true, seed: seedWebHub });
});
after(async () => web?.close());

test('opt-in report: a well-formed date outside 1970–9999 names the range; a malformed one names the format', async () => {
  const b = new Browser();
  const page = await (await b.fetch(`${web.baseUrl}/app/sign-in`)).text();
  const fields = new URLSearchParams({ csrf: hidden(page, 'csrf'), next: '/app', email: ADMIN.email, password: ADMIN.password });
  assert.equal(
    (
      await b.fetch(`${web.baseUrl}/app/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: fields.toString(),
      })
    ).status,
    303,
  );
  const report = `${web.baseUrl}/app/hubs/${HUB}/opt-ins`;
  const range = /must be between 1970-01-01 and 9999-12-31/;
  for (const [query, expected] of [
    ['from=1969-12-31', range],
    ['to=0001-01-01', range],
    ['from=2026-13-01', /Enter a date as YYYY-MM-DD\./],
    ['from=31.12.1969', /Enter a date as YYYY-MM-DD\./],
  ] as const) {
    for (const url of [`${report}?${query}`, `${report}.csv?${query}`]) {
      const r = await b.fetch(url);
      const text = await r.text();
      assert.equal(r.status, 400, url);
      // The report page names the problem next to the field (its form shows the format anyway).
      const said = url.includes('.csv') ? text : (/<p class="field-error" id="(?:from|to)-error">([^<]*)<\/p>/.exec(text)?.[1] ?? '');
      assert.match(said, expected, url);
      if (expected === range) assert.doesNotMatch(said, /YYYY-MM-DD/, url);
    }
  }
  assert.equal((await b.fetch(`${report}?from=1970-01-01&to=9999-12-31`)).status, 200);
});

test('a domain refusal on an embed URL is a logged 500, not the "malformed token" page', async () => {
  const key = await createKey(web.db, { hubId: HUB, name: 'embed for refusal', scope: 'embed' });
  const { logger, lines } = captureLog('info');
  const app = Fastify({ loggerInstance: logger });
  const refusingCache = {
    get: () => {
      throw new DomainError('not_found', 'no such report');
    },
    set: () => undefined,
  } as unknown as SpendReportCache;
  await app.register(webPlugin, {
    config: web.config,
    db: web.db,
    clock: systemClock,
    limiter: new MemoryRateLimiter(),
    caches: { ...createReportCaches(), spend: refusingCache },
  });
  try {
    const token = signEmbedToken({ hub: HUB, view: 'spend', exp: Math.floor(Date.now() / 1000) + 300, kid: key.id }, key.key);
    const r = await app.inject({ url: `/embed/spend?token=${encodeURIComponent(token)}` });
    assert.equal(r.statusCode, 500);
    assert.doesNotMatch(r.body, /malformed/);
    assert.match(r.body, /Something went wrong on our side/);
    assert.ok(
      lines.some((l) => l.level === 50 && l.msg === 'web request failed' && /no such report/.test(String(l.err?.message))),
      'logged as an error',
    );
    // A token that is not one is still the embed refusal page.
    const bad = await app.inject({ url: '/embed/spend?token=%E0%A4%A' });
    assert.equal(bad.statusCode, 401);
  } finally {
    await app.close();
  }
});
