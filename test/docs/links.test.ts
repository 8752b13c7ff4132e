// Every relative link in README.md and docs/*.md reaches a file of the repository, and every
// `#anchor` a heading of its page (GitHub's slugs), so moving a section cannot strand a link.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!.trim());
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

test('slugs are the ones GitHub makes', () => {
  assert.equal(slug('`GET /spend-by-workspace`'), 'get-spend-by-workspace');
  assert.equal(slug('Get a token, step by step'), 'get-a-token-step-by-step');
  assert.equal(slug('The Hub MCP endpoint (fixed header)'), 'the-hub-mcp-endpoint-fixed-header');
});

test('every relative link and anchor in the docs resolves', async () => {
  const pages = ['README.md', ...(await readdir(path.join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    const markdown = await readFile(path.join(ROOT, page), 'utf8');
    const prose = markdown.replace(/^\s*```[\s\S]*?^\s*```/gm, '');
    for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target!)) continue;
      checked += 1;
      const [file, anchor] = target!.split('#') as [string, string | undefined];
      const resolved = file ? path.join(path.dirname(path.join(ROOT, page)), file) : path.join(ROOT, page);
      if (!existsSync(resolved)) {
        broken.push(`${page}: ${target} (no such file)`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(await readFile(resolved, 'utf8')).has(anchor)) {
        broken.push(`${page}: ${target} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, []);
  assert.ok(checked > 20, `only ${checked} links checked`);
});
