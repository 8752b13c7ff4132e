// The layers of src/, top to bottom: main and cli → app → surfaces → domain → db → config →
// platform and policy. A file may import its own layer or any layer below it, never one above. Within
// surfaces, each surface (a folder under src/surfaces) stands alone: it imports only itself, the
// surface toolkit (src/surfaces/*.ts and src/surfaces/shared), and the layers below, except where
// one surface composes another's operations. Above the domain, concepts are reached through their
// services, never their repositories. No imports go round in a circle, between files or between folders.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '../..');
const src = path.join(root, 'src');

/**
 * Higher imports lower. config is read by db (to open the database) and above, and reads only
 * platform; policy (the numbers hubops promises) imports nothing and may be read by anything.
 */
const LAYERS: [prefix: string, rank: number][] = [
  ['main.ts', 6],
  ['cli/', 6],
  ['app.ts', 5],
  ['surfaces/', 4],
  ['domain/', 3],
  ['db/', 2],
  ['config.ts', 1],
  // Ad and social platforms' wire clients and their sandboxes: they know no hub, only platform and policy.
  ['integrations/', 0.5],
  ['platform/', 0],
  ['policy.ts', 0],
];

/** A surface composing another: the main MCP server serves the main API's and the Hub API's operations; both MCP servers serve the MCP Apps view. */
const COMPOSES: Record<string, string[]> = {
  'mcp-main': ['main-api', 'hub-api', 'mcp-apps'],
  'hub-api': ['mcp-apps'],
};

/** The surface toolkit every surface may use: not a surface of its own. */
const TOOLKIT = 'shared';

/**
 * Imports known to break the rules, to be removed as they are fixed (`from -> to`, paths under
 * src/). An entry that no longer matches an import fails the test, so the list only shrinks.
 */
const KNOWN: string[] = [];

function rankOf(file: string): number {
  const layer = LAYERS.find(([prefix]) => file === prefix || file.startsWith(prefix));
  if (!layer) throw new Error(`${file} is in no layer: add its place to LAYERS`);
  return layer[1];
}

/** The surface a file belongs to (the folder under surfaces/), or the toolkit. */
function surfaceOf(file: string): string | undefined {
  if (!file.startsWith('surfaces/')) return undefined;
  const parts = file.split('/');
  return parts.length > 2 ? parts[1] : TOOLKIT;
}

function breaks(from: string, to: string): string | undefined {
  if (rankOf(to) > rankOf(from)) return 'imports upwards';
  const fromSurface = surfaceOf(from);
  const toSurface = surfaceOf(to);
  if (fromSurface === undefined || toSurface === undefined) return undefined;
  if (toSurface === fromSurface || toSurface === TOOLKIT) return undefined;
  if (COMPOSES[fromSurface]?.includes(toSurface)) return undefined;
  return fromSurface === TOOLKIT ? 'the surface toolkit imports a surface' : 'imports a sibling surface';
}

async function sourceFiles(): Promise<string[]> {
  const entries = await readdir(src, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.relative(src, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

/** Every file under src/ a file imports, statically or dynamically (`import()`), as paths under src/. */
async function importsOf(file: string): Promise<string[]> {
  const text = await readFile(path.join(src, file), 'utf8');
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((i) => i.fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)))
    .filter((target) => !target.startsWith('../'));
}

test('no import in src/ runs up a layer or sideways between surfaces', async () => {
  const violations: string[] = [];
  for (const file of await sourceFiles()) {
    for (const target of await importsOf(file)) {
      const why = breaks(file, target);
      if (why) violations.push(`${file} -> ${target} (${why})`);
    }
  }
  const unexpected = violations.filter((v) => !KNOWN.some((k) => v.startsWith(`${k} `)));
  const stale = KNOWN.filter((k) => !violations.some((v) => v.startsWith(`${k} `)));
  assert.deepEqual(unexpected, [], `imports that break the layering:\n${unexpected.join('\n')}`);
  assert.deepEqual(stale, [], `allowed exceptions that no longer occur (remove them from KNOWN):\n${stale.join('\n')}`);
});

/** The strongly connected groups of more than one node in a graph: each holds a cycle. */
function cycles(graph: Map<string, Set<string>>): string[][] {
  // Tarjan's algorithm.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (stack.includes(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      group.push(member);
    } while (member !== node);
    if (group.length > 1) found.push(group.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

/**
 * The folder a file counts in for loops: each surface, the surface toolkit's files
 * (surfaces/*.ts) and shared/ apart, each domain concept, the domain's own files, db, platform…
 */
function folderOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return file;
  if (parts[0] === 'surfaces' || parts[0] === 'domain') return parts.length > 2 ? `${parts[0]}/${parts[1]}/` : `${parts[0]}/*.ts`;
  return `${parts[0]}/`;
}

test('no import cycle between files of src/, and no loop between its folders', async () => {
  const files = new Map<string, Set<string>>();
  const folders = new Map<string, Set<string>>();
  for (const file of await sourceFiles()) {
    files.set(file, new Set(await importsOf(file)));
    for (const target of files.get(file)!) {
      if (folderOf(target) !== folderOf(file))
        (folders.get(folderOf(file)) ?? folders.set(folderOf(file), new Set()).get(folderOf(file))!).add(folderOf(target));
    }
  }
  const show = (groups: string[][]) => groups.map((group) => group.join(' <-> ')).join('\n');
  assert.deepEqual(cycles(files), [], `files that import each other, directly or around a loop:\n${show(cycles(files))}`);
  assert.deepEqual(cycles(folders), [], `folders that import each other (move what both need below them):\n${show(cycles(folders))}`);
});

/**
 * Above the domain (surfaces, app.ts, main.ts and the operator CLI, a way in of its own) a concept
 * is reached through its services, which hold its rules: no file there imports a repository
 * (`*.repository.ts`). The exception by design, `from -> to` under src/: the OAuth storage adapter,
 * oidc-provider's storage interface in its own shapes, which revokes a grant where the provider
 * destroys one. An entry that no longer matches an import fails the test, so the list only shrinks.
 */
const REPOSITORY_IMPORTS_BY_DESIGN = ['surfaces/oauth/adapter.ts -> domain/oauth/grants.repository.ts'];

/** Concept folders used from above the domain without a service, each with its reason; the list only shrinks too. */
const WITHOUT_SERVICE: string[] = [];

const isAboveDomain = (file: string) => rankOf(file) > rankOf('domain/');

/** The concept folder of a file under domain/ (domain/<concept>), or undefined for a file directly in domain/. */
function conceptOf(file: string): string | undefined {
  const parts = file.split('/');
  return parts[0] === 'domain' && parts.length > 2 ? `domain/${parts[1]}` : undefined;
}

test('above the domain, every concept is reached through its services: no repository imports (the OAuth storage adapter aside), and every concept used there has a *.service.ts', async () => {
  const files = await sourceFiles();
  const repositoryImports: string[] = [];
  const conceptsUsed = new Set<string>();
  for (const file of files.filter(isAboveDomain)) {
    for (const target of await importsOf(file)) {
      if (target.startsWith('domain/') && target.endsWith('.repository.ts')) repositoryImports.push(`${file} -> ${target}`);
      const concept = conceptOf(target);
      if (concept) conceptsUsed.add(concept);
    }
  }
  const unexpected = repositoryImports.filter((i) => !REPOSITORY_IMPORTS_BY_DESIGN.includes(i));
  const stale = REPOSITORY_IMPORTS_BY_DESIGN.filter((i) => !repositoryImports.includes(i));
  assert.deepEqual(unexpected, [], `files above the domain that import a repository (call its service instead):\n${unexpected.join('\n')}`);
  assert.deepEqual(
    stale,
    [],
    `allowed repository imports that no longer occur (remove them from REPOSITORY_IMPORTS_BY_DESIGN):\n${stale.join('\n')}`,
  );

  const hasService = (concept: string) => files.some((f) => f.startsWith(`${concept}/`) && f.endsWith('.service.ts'));
  const withoutService = [...conceptsUsed].filter((c) => !hasService(c)).sort();
  assert.deepEqual(
    withoutService.filter((c) => !WITHOUT_SERVICE.includes(c)),
    [],
    'concept folders used above the domain without a <concept>.service.ts',
  );
  const staleConcepts = WITHOUT_SERVICE.filter((c) => !withoutService.includes(c));
  assert.deepEqual(
    staleConcepts,
    [],
    `concepts listed in WITHOUT_SERVICE that have a service or are no longer used above the domain:\n${staleConcepts.join('\n')}`,
  );
});

test('repositories refuse nothing: no *.repository.ts imports platform/errors.ts (refusals are rules, made by services)', async () => {
  const refusing: string[] = [];
  for (const file of (await sourceFiles()).filter((f) => f.endsWith('.repository.ts'))) {
    if ((await importsOf(file)).includes('platform/errors.ts')) refusing.push(file);
  }
  assert.deepEqual(refusing, [], 'repositories that import DomainError: return undefined or a row, and let the service refuse');
});

/**
 * SQL lives in domain/ and db/: every other file calls them. The one exception by design is the
 * OAuth storage adapter (oidc-provider's storage interface, in its own shapes).
 */
const SQL_OUTSIDE_DOMAIN_BY_DESIGN = ['surfaces/oauth/adapter.ts'];

/** How a file reaches the database itself: importing kysely or pg, writing sql`…`, or querying through a Db. */
async function databaseUseOf(file: string): Promise<string[]> {
  const text = await readFile(path.join(src, file), 'utf8');
  const uses = ts
    .preProcessFile(text, true, true)
    .importedFiles.map((i) => i.fileName)
    .filter((specifier) => /^(kysely|pg)(\/|$)/.test(specifier))
    .map((specifier) => `imports ${specifier}`);
  if (/\bsql`/.test(text)) uses.push('writes sql`…`');
  if (/\.kysely\b|\.pool\.(query|connect)\(|\.(selectFrom|insertInto|updateTable|deleteFrom)\(/.test(text))
    uses.push('queries through a Db');
  return uses;
}

test('no file outside src/domain and src/db reaches the database itself (the OAuth storage adapter aside); none at all under surfaces/web', async () => {
  const violations: string[] = [];
  const outside = (f: string) => !f.startsWith('domain/') && !f.startsWith('db/') && !SQL_OUTSIDE_DOMAIN_BY_DESIGN.includes(f);
  for (const file of (await sourceFiles()).filter(outside)) {
    for (const use of await databaseUseOf(file)) violations.push(`${file} ${use}`);
  }
  assert.deepEqual(
    violations.filter((v) => v.startsWith('surfaces/web/')),
    [],
    'the web admin reaches the database only through domain/',
  );
  assert.deepEqual(violations, [], `files that reach the database themselves:\n${violations.join('\n')}`);
});

test('policy.ts imports nothing: any layer may read the promised numbers', async () => {
  const text = await readFile(path.join(src, 'policy.ts'), 'utf8');
  assert.deepEqual(
    ts.preProcessFile(text, true, true).importedFiles.map((i) => i.fileName),
    [],
  );
});
