// The service's own documentation as a small searchable corpus, so an agent can learn the API
// from inside a conversation: the guide's sections (README and docs pages), and for each OpenAPI document an overview
// (authentication, limits, errors) plus one entry per operation (method, URL, parameters, body
// and success response). Ranking is plain term matching — the corpus is a few hundred entries.
// The main MCP server's search_docs and read_doc serve it.

import type { OpenApiDocument } from '../openapi.ts';

export type DocSource = 'guide' | 'openapi';

export interface DocEntry {
  /** Stable id for read_doc: `<page>/<section-slug>` (`readme/…`, `hub-api/…`), `<prefix>/overview`, `<prefix>/<operationId>`. */
  id: string;
  title: string;
  source: DocSource;
  text: string;
}

export interface DocHit {
  id: string;
  title: string;
  source: DocSource;
  snippet: string;
  score: number;
}

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

/**
 * A guide page split at `#`/`##`/`###` headings (fenced code kept whole); each section's title is
 * its heading path, its id `<page>/<slug of the title>`.
 */
export function guideEntries(page: string, markdown: string): DocEntry[] {
  const entries: DocEntry[] = [];
  const seen = new Map<string, number>();
  let h2 = '';
  let fenced = false;
  let current: { title: string; lines: string[] } | undefined;
  const flush = () => {
    if (!current?.lines.join('').trim()) return;
    const base = `${page}/${slug(current.title)}`;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    entries.push({ id: n === 1 ? base : `${base}-${n}`, title: current.title, source: 'guide', text: current.lines.join('\n').trim() });
  };
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^(#{1,3}) (.+)$/.exec(line);
    if (heading) {
      flush();
      const text = heading[2]!.trim();
      if (heading[1] !== '###') h2 = text;
      current = { title: heading[1] === '###' ? `${h2} › ${text}` : text, lines: [] };
    } else if (current) {
      current.lines.push(line);
    }
  }
  flush();
  return entries;
}

/** What a parameter's description reads of its schema. */
interface SchemaLike {
  type?: unknown;
  enum?: unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  default?: unknown;
  items?: SchemaLike;
}

/** `integer 1–500, default 100`, `one of: a, b`, `string (date-time)`. */
function describeSchema(schema: SchemaLike | undefined): string {
  if (!schema) return '';
  if (Array.isArray(schema.enum)) return `one of: ${schema.enum.join(', ')}`;
  const parts = [String(schema.type ?? 'value')];
  if (schema.type === 'array' && schema.items) parts[0] = `array of ${describeSchema(schema.items)}`;
  if (schema.format) parts.push(`(${schema.format})`);
  if (schema.minimum !== undefined && schema.maximum !== undefined) parts.push(`${schema.minimum}–${schema.maximum}`);
  if (schema.maxLength !== undefined) parts.push(`at most ${schema.maxLength} characters`);
  if (schema.default !== undefined) parts.push(`default ${JSON.stringify(schema.default)}`);
  return parts.join(' ');
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

/** An overview entry (the document's description: authentication, limits, errors) and one per operation. */
export function openApiEntries(document: OpenApiDocument, prefix: string): DocEntry[] {
  const server = document.servers?.[0]?.url ?? '';
  const overview: DocEntry = {
    id: `${prefix}/overview`,
    title: `${document.info.title}: overview (authentication, paging, limits, errors)`,
    source: 'openapi',
    text: [
      `Base URL: ${server}`,
      document.info.description ?? '',
      'Operations:',
      ...Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => `- ${method.toUpperCase()} ${path} — ${op.operationId}: ${op.summary ?? ''}`),
      ),
    ].join('\n\n'),
  };
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]): DocEntry => {
      const success = Object.entries(op.responses ?? {}).find(([status]) => status.startsWith('2'));
      const body = Object.values(op.requestBody?.content ?? {})[0];
      return {
        id: `${prefix}/${op.operationId}`,
        title: `${document.info.title}: ${method.toUpperCase()} ${path} (${op.operationId})`,
        source: 'openapi',
        text: [
          `${method.toUpperCase()} ${server}${path}`,
          op.summary ?? '',
          op.description ?? '',
          op.parameters?.length
            ? `Parameters:\n${op.parameters.map((p) => `- ${p.name} (${p.in}${p.required ? ', required' : ''}; ${describeSchema(p.schema as SchemaLike)}): ${p.description ?? ''}`).join('\n')}`
            : '',
          body ? `Request body (${Object.keys(op.requestBody?.content ?? {})[0]}):\n${json(body.schema)}` : '',
          success ? `Response ${success[0]}:\n${json(Object.values(success[1].content ?? {})[0]?.schema ?? success[1].description)}` : '',
        ]
          .filter(Boolean)
          .join('\n\n'),
      };
    }),
  );
  return [overview, ...operations];
}

// Words that carry no meaning in a question about the API.
const STOP_WORDS = new Set(
  'a an and are as at be by can do does for from get how i in is it me my of on or so the this to what when where which who why with you your'.split(
    ' ',
  ),
);

/** Terms of a text: each word, and for `snake_case`/`kebab-case` compounds the whole and each part. */
function terms(text: string): string[] {
  const out: string[] = [];
  for (const word of text.toLowerCase().match(/[a-z0-9]+(?:[_-][a-z0-9]+)*/g) ?? []) {
    const parts = word.split(/[_-]/);
    if (parts.length > 1) out.push(word.replace(/-/g, '_'));
    for (const part of parts) if (!STOP_WORDS.has(part)) out.push(part);
  }
  return out;
}

interface Indexed {
  entry: DocEntry;
  title: string[];
  body: string[];
}

export class DocIndex {
  readonly #entries: Indexed[];
  readonly #byId: Map<string, DocEntry>;
  constructor(entries: DocEntry[]) {
    this.#entries = entries.map((entry) => ({ entry, title: terms(entry.title), body: terms(entry.text) }));
    this.#byId = new Map(entries.map((e) => [e.id, e]));
  }

  get size(): number {
    return this.#entries.length;
  }

  /**
   * Entries ranked by how often the query's terms start a term of the entry (title terms count
   * three times), dampened logarithmically and weighted by the share of query terms matched.
   */
  search(query: string, options: { limit?: number; source?: DocSource } = {}): DocHit[] {
    const words = [...new Set(terms(query))];
    if (words.length === 0) return [];
    return this.#entries
      .filter(({ entry }) => options.source === undefined || entry.source === options.source)
      .map(({ entry, title, body }) => {
        let score = 0;
        let matched = 0;
        for (const word of words) {
          const hits = title.filter((t) => t.startsWith(word)).length * 3 + body.filter((t) => t.startsWith(word)).length;
          if (hits) matched++;
          // A compound like list_posts names one thing exactly: it outweighs its parts.
          score += Math.log1p(hits) * (word.includes('_') ? 3 : 1);
        }
        return { entry, score: score * (matched / words.length) ** 2 };
      })
      .filter((r) => r.score > 0)
      .sort((a, b) => b.score - a.score || a.entry.id.localeCompare(b.entry.id))
      .slice(0, options.limit ?? 8)
      .map(({ entry, score }) => ({
        id: entry.id,
        title: entry.title,
        source: entry.source,
        snippet: snippetOf(entry.text, words),
        score: Math.round(score * 100) / 100,
      }));
  }

  read(id: string): DocEntry | undefined {
    return this.#byId.get(id);
  }

  list(source?: DocSource): { id: string; title: string; source: DocSource }[] {
    return this.#entries
      .filter(({ entry }) => source === undefined || entry.source === source)
      .map(({ entry: { id, title, source: s } }) => ({ id, title, source: s }));
  }
}

/** About 280 characters of `text` around the first occurrence of a query word. */
function snippetOf(text: string, words: string[]): string {
  const lower = text.toLowerCase();
  const found = words.map((w) => lower.indexOf(w)).filter((i) => i >= 0);
  const at = found.length ? Math.min(...found) : 0;
  const start = Math.max(0, at - 80);
  return `${start > 0 ? '…' : ''}${text
    .slice(start, start + 280)
    .replace(/\s+/g, ' ')
    .trim()}${start + 280 < text.length ? '…' : ''}`;
}
