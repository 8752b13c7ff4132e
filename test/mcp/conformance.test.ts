// The official MCP conformance suite (@modelcontextprotocol/conformance, pinned) against both MCP
// servers of a started app: every server scenario it has runs, those that apply to our servers
// must pass (some only where a capability is declared), and each one that cannot apply is listed
// here with the reason (docs/mcp.md
// "Conformance" carries the same list). The suite's server runner takes a URL and no header, so
// it reaches each server through a local proxy that adds the credential — the Hub API key, or a
// hub admin's OAuth token for /mcp — and otherwise stands in for the app (test/support/header-proxy.ts).
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ServerCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { readKey, startApp, type TestApp } from '../support/app.ts';
import { killStartedGroups, ROOT, runNode, toolPath, versions } from '../support/child-processes.ts';
import { headerProxy, type HeaderProxy } from '../support/header-proxy.ts';
import { newClient, transport } from '../support/mcp-client.ts';
import { authorize, exchangeCode, REDIRECT, registerClient } from '../support/oauth-flow.ts';
import * as fx from '../support/world.ts';

const VERSION = '0.1.16';

/** Scenarios that test what our servers serve, and must pass on both. */
const APPLIES = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];

/**
 * Scenarios that cannot apply, and why. Most call tools, prompts or resources of the suite's own
 * example server ("everything server") by name; the others need capabilities our servers do not
 * declare, or a stateful session.
 */
const NOT_APPLICABLE: Record<string, string> = {
  'logging-set-level': 'no `logging` capability: the servers send no log messages',
  'completion-complete': 'no `completions` capability: no prompts or resource templates to complete',
  'tools-call-simple-text': "calls the example server's `test_simple_text` tool",
  'tools-call-image': "calls the example server's `test_image_content` tool (our tools return JSON, no images)",
  'tools-call-audio': "calls the example server's `test_audio_content` tool (no audio)",
  'tools-call-embedded-resource': "calls the example server's `test_embedded_resource` tool",
  'tools-call-mixed-content': "calls the example server's `test_multiple_content_types` tool",
  'tools-call-with-logging':
    "calls the example server's `test_tool_with_logging` tool, which sends log notifications (no `logging` capability)",
  'tools-call-error':
    "calls the example server's `test_error_handling` tool (our tool errors are tested in test/mcp/hub-mcp.test.ts and connect.test.ts)",
  'tools-call-with-progress': "calls the example server's `test_tool_with_progress` tool (no tool runs long enough to report progress)",
  'tools-call-sampling': "calls the example server's `test_sampling` tool; the servers never ask the client's model (no sampling)",
  'tools-call-elicitation': "calls the example server's `test_elicitation` tool; the servers never ask the user (no elicitation)",
  'elicitation-sep1034-defaults': 'elicitation, as above',
  'elicitation-sep1330-enums': 'elicitation, as above',
  'json-schema-2020-12':
    "looks for the example server's `json_schema_2020_12_tool` (our input schemas are JSON Schema 2020-12 and are validated by the SDK clients in the other tests)",
  'server-sse-polling': 'needs a session (`Mcp-Session-Id`) and SSE responses: both servers are stateless and answer with JSON',
  'server-sse-multiple-streams': 'needs a session (`Mcp-Session-Id`): both servers are stateless',
  'resources-read-text': "reads the example server's `test://static-text` resource",
  'resources-read-binary': "reads the example server's `test://static-binary` resource",
  'resources-templates-read': "reads the example server's resource template; no resource templates",
  'resources-subscribe': "subscribes to the example server's resource; no resource subscriptions (`subscribe` is not declared)",
  'resources-unsubscribe': 'as above',
  'prompts-list': 'no `prompts` capability',
  'prompts-get-simple': 'no `prompts` capability',
  'prompts-get-with-args': 'no `prompts` capability',
  'prompts-get-embedded-resource': 'no `prompts` capability',
  'prompts-get-with-image': 'no `prompts` capability',
};

/**
 * Scenarios that apply where the endpoint declares a capability: `resources-list` must pass on an
 * endpoint that serves resources (the interactive view's `ui://` resource); on one that declares
 * none there is nothing to list, and the method must then be unknown to it.
 */
const WHEN_DECLARED: Record<string, 'resources'> = { 'resources-list': 'resources' };

/**
 * Checks that fail on one endpoint by design, with the reason. The Hub MCP endpoint refuses every
 * request that carries an `Origin` (403 `browser_request_rejected`): a Hub API key must never be
 * in a browser, so the suite's "a valid localhost Origin is accepted" cannot hold there, while
 * its "a foreign Host/Origin is refused" does.
 */
const BY_DESIGN: Record<string, Record<string, { reason: string; error: string }>> = {
  hub: {
    'dns-rebinding-protection/localhost-host-valid-accepted': {
      reason: 'the Hub MCP endpoint refuses any request with an Origin header: its key is for server-side code only',
      error: 'browser_request_rejected',
    },
  },
  main: {},
};

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
  details?: { body?: { error?: string } };
}

let live: TestApp;
const proxies: Record<'hub' | 'main', HeaderProxy | undefined> = { hub: undefined, main: undefined };
let out: string;

before(async () => {
  // No rate limit: the suite sends more requests than a minute of the Standard plan allows, and
  // limits are not what it tests.
  live = await startApp({ listen: true, seed: fx.seedWebHub, limiter: 'unlimited' });
  out = await mkdtemp(path.join(tmpdir(), 'hubops-conformance-'));
  const key = await readKey(live.db, fx.HUB);
  const client = await registerClient(live, { confidential: false, redirectUri: REDIRECT });
  const granted = await authorize(live, client, { ...fx.ADMIN, redirectUri: REDIRECT, resource: `${live.baseUrl}/mcp`, workspace: '' });
  const tokens = await exchangeCode(live, client, granted, REDIRECT);
  proxies.hub = await headerProxy(live.baseUrl, { authorization: `Bearer ${key}` });
  proxies.main = await headerProxy(live.baseUrl, { authorization: `Bearer ${tokens.access_token}` });
});
after(async () => {
  killStartedGroups();
  await Promise.all(Object.values(proxies).map((p) => p?.close()));
  await rm(out, { recursive: true, force: true });
  await live.close();
});

const suite = (...args: string[]) => runNode([toolPath('conformance'), ...args], { cwd: ROOT, timeoutMs: 45_000 });

/** Runs every server scenario (`--suite all`) against `url`; the checks of each scenario. */
async function runAll(name: string, url: string): Promise<Map<string, Check[]>> {
  const dir = path.join(out, name);
  const run = await suite('server', '--suite', 'all', '--url', url, '-o', dir);
  // The exit code is 1 whenever a check fails, which the scenarios that cannot apply do.
  assert.ok(run.stdout.includes('=== SUMMARY ==='), `${run.stdout}\n${run.stderr}`);
  const results = new Map<string, Check[]>();
  for (const entry of await readdir(dir)) {
    const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(entry)?.[1];
    assert.ok(scenario, entry);
    results.set(scenario, JSON.parse(await readFile(path.join(dir, entry, 'checks.json'), 'utf8')) as Check[]);
  }
  return results;
}

test(`the suite is the pinned ${VERSION}, and every server scenario it has is classified here`, async () => {
  assert.deepEqual(versions('@modelcontextprotocol/conformance'), { installed: VERSION, pinned: VERSION });
  const listed = await suite('list', '--server');
  assert.equal(listed.code, 0, listed.stderr);
  const scenarios = [...listed.stdout.matchAll(/^\s+- (\S+) \[/gm)].map((m) => m[1]!);
  assert.ok(scenarios.length > 0, listed.stdout);
  const classified = [...APPLIES, ...Object.keys(WHEN_DECLARED), ...Object.keys(NOT_APPLICABLE)];
  assert.deepEqual(
    scenarios.filter((s) => !classified.includes(s)),
    [],
    'scenarios neither applied nor explained',
  );
  assert.deepEqual(
    classified.filter((s) => !scenarios.includes(s)),
    [],
    'classified scenarios the suite no longer has',
  );
});

test('docs/mcp.md "Conformance" lists the same scenarios as not applicable', async () => {
  const page = await readFile(path.join(ROOT, 'docs/mcp.md'), 'utf8');
  const from = page.indexOf('\n### Conformance\n');
  assert.ok(from >= 0, 'docs/mcp.md has a "### Conformance" subsection');
  const rows = page
    .slice(from, page.indexOf('\n## ', from))
    .split('\n')
    .filter((line) => line.startsWith('| `'));
  const listed = rows.flatMap((row) => [...row.split('|')[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  assert.deepEqual(listed.sort(), [...Object.keys(WHEN_DECLARED), ...Object.keys(NOT_APPLICABLE)].sort());
});

for (const [name, endpoint] of [
  ['hub', '/v1/hub/mcp'],
  ['main', '/mcp'],
] as const) {
  describe(`${name === 'hub' ? 'the Hub MCP endpoint' : 'the main MCP server'} (${endpoint})`, () => {
    let results: Map<string, Check[]>;
    let capabilities: ServerCapabilities;
    before(async () => {
      const url = `${proxies[name]!.origin}${endpoint}`;
      results = await runAll(name, url);
      const client = newClient();
      await client.connect(transport(new URL(url), {}));
      capabilities = client.getServerCapabilities()!;
      await client.close();
    });

    for (const scenario of APPLIES) {
      test(`${scenario} passes`, () => {
        const checks = results.get(scenario);
        assert.ok(checks, `${scenario} did not run`);
        const failed = checks.filter((c) => c.status === 'FAILURE' && !(`${scenario}/${c.id}` in BY_DESIGN[name]!));
        assert.deepEqual(failed, [], JSON.stringify(failed, null, 2));
        assert.ok(
          checks.some((c) => c.status === 'SUCCESS'),
          `${scenario}: no check passed: ${JSON.stringify(checks)}`,
        );
        for (const [at, expected] of Object.entries(BY_DESIGN[name]!)) {
          if (!at.startsWith(`${scenario}/`)) continue;
          const check: Check | undefined = checks.find((c) => `${scenario}/${c.id}` === at);
          assert.equal(check?.status, 'FAILURE', `${at} now passes: remove it from BY_DESIGN (${expected.reason})`);
          assert.equal(check?.details?.body?.error, expected.error, JSON.stringify(check));
        }
      });
    }

    for (const [scenario, capability] of Object.entries(WHEN_DECLARED)) {
      test(`${scenario} passes where the endpoint declares ${capability}, and finds the method unknown where it does not`, () => {
        const checks = results.get(scenario);
        assert.ok(checks, `${scenario} did not run`);
        if (capabilities[capability]) {
          assert.ok(checks.length > 0 && checks.every((c) => c.status === 'SUCCESS'), JSON.stringify(checks, null, 2));
        } else {
          assert.ok(
            checks.some((c) => c.status === 'FAILURE' && /-32601/.test(c.errorMessage ?? '')),
            JSON.stringify(checks, null, 2),
          );
        }
      });
    }

    test('the scenarios that cannot apply ran too (nothing the suite has is left out)', () => {
      assert.deepEqual(
        Object.keys(NOT_APPLICABLE).filter((s) => !results.has(s)),
        [],
      );
    });
  });
}
