// The documentation's shell examples as a test runs them: every ```sh / ```bash / ```shell block
// of a page, in order, each followed (optionally) by the response it shows; and the comparison of
// what a block printed with that response.
//
// A response is the fenced block right after a command (blank lines between are fine):
// - ```json: the output must be one JSON document of the same shape: the same keys at every
//   level, the same value types (null is a type of its own), arrays compared element by element.
//   `…` is allowed in two places only: as the last element of an array ("more elements, each
//   shaped like the one before it") and as an object member ("more keys not shown").
// - ```text: line by line; `…` inside a line matches any text, a line holding only `…` matches
//   any number of lines.
// A block is skipped only when the line before it (blank lines aside) is
// `<!-- docs-test: skip — REASON -->`.

export interface Example {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  skip?: string;
  response?: { lang: 'json' | 'text'; text: string; line: number };
}

const SHELL = new Set(['sh', 'bash', 'shell']);
const SKIP = /^<!--\s*docs-test:\s*skip\s*[—-]\s*(.+?)\s*-->$/;

interface Fence {
  lang: string;
  start: number;
  body: string;
  end: number;
}

function fences(markdown: string): Fence[] {
  const lines = markdown.split('\n');
  const out: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    // Fences may be indented (inside a list item); the body loses that indentation.
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    let end = i + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++;
    if (end >= lines.length) throw new Error(`unclosed code fence at line ${start + 1}`);
    const indent = open[1]!.length;
    out.push({
      lang: open[2]!,
      start,
      body: lines
        .slice(start + 1, end)
        .map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)))
        .join('\n'),
      end,
    });
    i = end;
  }
  return out;
}

/** The shell examples of one page, in document order. */
export function examplesOf(page: string, markdown: string): Example[] {
  const lines = markdown.split('\n');
  const all = fences(markdown);
  const examples: Example[] = [];
  all.forEach((fence, index) => {
    if (!SHELL.has(fence.lang)) return;
    let before = fence.start - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const skip = before >= 0 ? SKIP.exec(lines[before]!.trim())?.[1] : undefined;
    const next = all[index + 1];
    const between = next ? lines.slice(fence.end + 1, next.start) : [];
    const response =
      next && (next.lang === 'json' || next.lang === 'text') && between.every((l) => l.trim() === '')
        ? { lang: next.lang as 'json' | 'text', text: next.body, line: next.start + 1 }
        : undefined;
    examples.push({ page, line: fence.start + 1, code: fence.body, ...(skip ? { skip } : {}), ...(response ? { response } : {}) });
  });
  return examples;
}

// ---------------------------------------------------------------------------------------------
// Shapes: a JSON-like text where `…` may stand for elided elements or members.

export type Shape =
  | { kind: 'object'; members: [string, Shape][]; more: boolean }
  | { kind: 'array'; items: Shape[]; more: boolean }
  | { kind: 'string' | 'number' | 'boolean' | 'null' };

const ELLIPSIS = '…';

/** Parses a shown response; throws on anything that is neither JSON nor an allowed `…`. */
export function parseShape(text: string): Shape {
  let at = 0;
  const fail = (what: string): never => {
    throw new Error(`shown JSON: ${what} at offset ${at}: ${JSON.stringify(text.slice(at, at + 30))}`);
  };
  const space = () => {
    while (at < text.length && /\s/.test(text[at]!)) at++;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, at)) {
      at += word.length;
      return true;
    }
    return false;
  };
  const string = (): string => {
    const start = at;
    at++;
    while (at < text.length && text[at] !== '"') at += text[at] === '\\' ? 2 : 1;
    if (at >= text.length) fail('unterminated string');
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const value = (): Shape => {
    space();
    const c = text[at];
    if (c === '{') {
      at++;
      const members: [string, Shape][] = [];
      let more = false;
      space();
      if (literal('}')) return { kind: 'object', members, more };
      for (;;) {
        space();
        if (literal(ELLIPSIS)) more = true;
        else {
          if (more) fail('members after `…`');
          if (text[at] !== '"') fail('expected a key');
          const key = string();
          space();
          if (!literal(':')) fail('expected `:`');
          members.push([key, value()]);
        }
        space();
        if (literal('}')) return { kind: 'object', members, more };
        if (!literal(',')) fail('expected `,` or `}`');
      }
    }
    if (c === '[') {
      at++;
      const items: Shape[] = [];
      let more = false;
      space();
      if (literal(']')) return { kind: 'array', items, more };
      for (;;) {
        space();
        if (literal(ELLIPSIS)) {
          if (items.length === 0) fail('`…` needs an element before it to stand for');
          more = true;
        } else {
          if (more) fail('elements after `…`');
          items.push(value());
        }
        space();
        if (literal(']')) return { kind: 'array', items, more };
        if (!literal(',')) fail('expected `,` or `]`');
      }
    }
    if (c === '"') {
      string();
      return { kind: 'string' };
    }
    if (literal('true') || literal('false')) return { kind: 'boolean' };
    if (literal('null')) return { kind: 'null' };
    const number = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(at));
    if (number) {
      at += number[0].length;
      return { kind: 'number' };
    }
    return fail('expected a value');
  };
  const shape = value();
  space();
  if (at < text.length) fail('trailing text');
  return shape;
}

const kindOf = (v: unknown): Shape['kind'] => (v === null ? 'null' : Array.isArray(v) ? 'array' : (typeof v as Shape['kind']));

/** Every way `actual` differs from `shape`, each as `path: what` (empty when they agree). */
export function shapeDifferences(shape: Shape, actual: unknown, path = '$'): string[] {
  const kind = kindOf(actual);
  if (kind !== shape.kind) return [`${path}: shown ${shape.kind}, got ${kind} ${JSON.stringify(actual)?.slice(0, 80)}`];
  if (shape.kind === 'object') {
    const object = actual as Record<string, unknown>;
    const out: string[] = [];
    const shown = new Set(shape.members.map(([k]) => k));
    for (const [key, member] of shape.members) {
      if (!(key in object)) out.push(`${path}.${key}: shown, missing from the output`);
      else out.push(...shapeDifferences(member, object[key], `${path}.${key}`));
    }
    if (!shape.more) for (const key of Object.keys(object)) if (!shown.has(key)) out.push(`${path}.${key}: in the output, not shown`);
    return out;
  }
  if (shape.kind === 'array') {
    const array = actual as unknown[];
    if (array.length < shape.items.length) return [`${path}: shows ${shape.items.length} elements, got ${array.length}`];
    if (array.length > shape.items.length && !shape.more)
      return [`${path}: shows ${shape.items.length} elements (no \`…\`), got ${array.length}`];
    return array.flatMap((item, i) => shapeDifferences(shape.items[Math.min(i, shape.items.length - 1)]!, item, `${path}[${i}]`));
  }
  return [];
}

/** Whether printed text matches a shown ```text response (`…` wildcards). */
export function textMatches(shown: string, actual: string): boolean {
  const want = shown.split('\n');
  const got = actual.replace(/\r/g, '').replace(/\n$/, '').split('\n');
  const line = (pattern: string) =>
    new RegExp(
      `^${pattern
        .split(ELLIPSIS)
        .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    );
  const match = (w: number, g: number): boolean => {
    if (w === want.length) return g === got.length;
    if (want[w]!.trim() === ELLIPSIS) {
      for (let k = g; k <= got.length; k++) if (match(w + 1, k)) return true;
      return false;
    }
    return g < got.length && line(want[w]!).test(got[g]!) && match(w + 1, g + 1);
  };
  return match(0, 0);
}

/** Why `output` is not the response shown, or undefined when it is. */
export function responseMismatch(response: NonNullable<Example['response']>, output: string): string | undefined {
  if (response.lang === 'text') return textMatches(response.text, output) ? undefined : `output does not match the text shown:\n${output}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(output);
  } catch {
    return `output is not one JSON document:\n${output.slice(0, 2000)}`;
  }
  const differences = shapeDifferences(parseShape(response.text), parsed);
  return differences.length
    ? `output differs from the response shown:\n  ${differences.slice(0, 20).join('\n  ')}\noutput: ${output.slice(0, 2000)}`
    : undefined;
}
