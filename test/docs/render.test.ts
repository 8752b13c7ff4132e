// The /docs renderer (src/surfaces/docs/render.ts) on hostile input and on the repository's own
// pages: no markup or script passes through, links resolve onto served pages, headings get
// GitHub's anchors, `$BASE` becomes the server's address; every page using `$BASE` says so.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { BASE_NOTE_START, renderDoc, servedMarkdown } from '../../src/surfaces/docs/render.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BASE = 'https://hubops.example.com/ops';
const SERVED = new Set(['README.md', 'docs/hub-api.md', 'docs/mcp.md', 'docs/screenshots/home-390.png']);
const locate = (p: string) => (SERVED.has(p) ? (p === 'README.md' ? '/ops/docs' : `/ops/${p}`) : undefined);
const render = (markdown: string, file = 'docs/mcp.md') => renderDoc(markdown, { file, baseUrl: BASE, locate }).html;

test('raw HTML, scripts and script URLs render inert', () => {
  const hostile = [
    '<script>alert(1)</script>',
    '<img src=x onerror=alert(1)>',
    '<iframe src="https://evil.example"></iframe>',
    '[click](javascript:alert(1))',
    '[click](JAVASCRIPT:alert(1))',
    '[click](  javascript:alert(1))',
    '[click](java&#x73;cript:alert(1))',
    '[click](vbscript:msgbox)',
    '[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
    '![x](javascript:alert(1))',
    '<javascript:alert(1)>',
    '<a href="javascript:alert(1)">x</a>',
    '[x](https://ok.example "a\\" onmouseover=\\"alert(1)")',
    '<style>body{display:none}</style>',
    '# Title <script>alert(1)</script>',
    '| a | <b onclick=alert(1)>b</b> |\n|---|---|\n| <script>x</script> | y |',
  ].join('\n\n');
  const html = render(hostile);
  // No tag of the input survives as a tag: every `<` of it is escaped.
  for (const tag of ['<script', '<img src=x', '<iframe', '<style', '<b ', '<a href="javascript']) assert.ok(!html.includes(tag), tag);
  assert.ok(!/href="\s*(javascript|vbscript|data):/i.test(html), html);
  assert.ok(!/src="\s*javascript:/i.test(html), html);
  assert.ok(!/\son\w+="/i.test(html.replace(/&quot;/g, '')), 'no event handler attribute');
  assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  // The only URL with a scheme that remains a link is the https one.
  assert.deepEqual(
    [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]).filter((h) => !h!.startsWith('#')),
    ['https://ok.example'],
  );
});

test('links between pages resolve onto the served pages; other repository files are named, not linked', () => {
  const html = render(
    [
      '[hub](hub-api.md) [section](./hub-api.md#keys) [readme](../README.md#quick-start) [self](#top)',
      '[src](../src/config.ts) [outside](../../etc/passwd) [web](https://example.com/x)',
      '![home](screenshots/home-390.png) ![missing](screenshots/nope.png)',
    ].join('\n\n'),
  );
  assert.match(html, /<a href="\/ops\/docs\/hub-api\.md">hub<\/a>/);
  assert.match(html, /<a href="\/ops\/docs\/hub-api\.md#keys">section<\/a>/);
  assert.match(html, /<a href="\/ops\/docs#quick-start">readme<\/a>/);
  assert.match(html, /<a href="#top">self<\/a>/);
  assert.match(html, /<span class="repo-file" title="..\/src\/config.ts in the repository">src<\/span>/);
  assert.match(html, /<span class="repo-file" title="..\/..\/etc\/passwd in the repository">outside<\/span>/);
  assert.match(html, /<a href="https:\/\/example.com\/x" rel="noopener noreferrer">web<\/a>/);
  assert.match(html, /<img src="\/ops\/docs\/screenshots\/home-390.png" alt="home" loading="lazy">/);
  assert.match(html, /<span class="repo-file">missing<\/span>/);
  // From the README, docs/ links are one level down.
  assert.match(render('[mcp](docs/mcp.md#configurations)', 'README.md'), /href="\/ops\/docs\/mcp\.md#configurations"/);
});

test("headings get GitHub's anchors, repeated ones numbered; the ## ones are the page's sections", () => {
  const { html, sections } = renderDoc('# The API\n\n## `GET /spend-by-workspace`\n\n## Limits\n\n### Limits\n\n## Limits', {
    file: 'docs/x.md',
    baseUrl: BASE,
    locate,
  });
  assert.match(html, /<h1 id="the-api">The API<a class="anchor" href="#the-api"/);
  assert.match(html, /<h2 id="get-spend-by-workspace"><code>GET \/spend-by-workspace<\/code><a class="anchor"/);
  assert.match(html, /<h3 id="limits-1">/);
  assert.match(html, /<h2 id="limits-2">/);
  assert.deepEqual(
    sections.map((s) => s.id),
    ['get-spend-by-workspace', 'limits', 'limits-2'],
  );
});

test('$BASE becomes the address, the note says it, the docs test annotations go; code keeps what it shows', () => {
  const source = [
    "> The examples use `$BASE`, the server's address: run `export BASE=http://localhost:3000` first",
    '> (a local `npm start`; else your `BASE_URL`).',
    '',
    '<!-- docs-test: skip — a comment for the test -->',
    '```sh',
    'export BASE=http://localhost:3000',
    'curl "$BASE/v1/hub/opt-in-summary" ${BASE}/x $BASE_URL',
    '<!-- in code, kept -->',
    '```',
    '',
    'Open `$BASE/app`.',
  ].join('\n');
  const served = servedMarkdown(source, BASE);
  assert.ok(!served.includes('docs-test'));
  assert.ok(served.includes('<!-- in code, kept -->'));
  assert.ok(served.includes(`export BASE=${BASE}\n`));
  assert.ok(served.includes(`curl "${BASE}/v1/hub/opt-in-summary" ${BASE}/x $BASE_URL`));
  assert.equal(served.split('\n')[0], `> The examples show this server's address, <${BASE}>.`);
  assert.ok(!served.includes('(a local `npm start`'), 'the note is one line');
  const html = render(source);
  assert.match(html, new RegExp(`<a href="${BASE}/app"><code>${BASE}/app</code></a>`));
});

test('every page whose examples use $BASE carries the note saying what it is, before the first example', async () => {
  const pages = ['README.md', ...(await readdir(path.join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const missing: string[] = [];
  let using = 0;
  for (const page of pages) {
    const text = await readFile(path.join(ROOT, page), 'utf8');
    const note = text.indexOf(BASE_NOTE_START);
    // The first use outside the note (its own lines are the ones starting with `>` at its place).
    const afterNote = note === -1 ? 0 : text.indexOf('\n\n', note);
    const before = note === -1 ? text : text.slice(0, note);
    const used = /\$BASE\b|\$\{BASE\}/;
    if (!used.test(before) && !used.test(text.slice(afterNote))) continue;
    using += 1;
    // Before the first example using it (an intro may name `$BASE/…` just above the note).
    const firstExample = [...before.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].some((m) => used.test(m[1]!));
    if (note === -1 || firstExample) missing.push(page);
    // No hard-coded local address is left in an example, but the banner and `export BASE=`.
    const fenced = [...text.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!).join('\n');
    for (const line of fenced.split('\n'))
      if (line.includes('localhost:3000') && !/^\s*export BASE=|^hubops is running at|^ {2}\w[\w ]+ {2,}http/.test(line))
        missing.push(`${page}: ${line}`);
  }
  assert.deepEqual(missing, []);
  assert.ok(using >= 5, `only ${using} pages use $BASE`);
});
