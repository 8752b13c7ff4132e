// A strict reader of Prometheus's text exposition format (version 0.0.4), for tests: every line is
// a HELP, a TYPE or a sample; every sample belongs to a family declared by TYPE before it (a
// histogram's _bucket, _sum and _count included); label names and values are well formed; no
// series appears twice. Anything else throws, naming the line.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  /** Family name → type (counter, gauge, histogram, summary, untyped). */
  types: Map<string, string>;
  samples: Sample[];
  /** The value of the one sample with this name and exactly these labels (those given; others must not exist), or undefined. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** The samples of this name whose labels include these. */
  find(name: string, labels?: Record<string, string>): Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(text: string, line: string): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  // Prometheus reads values with Go's ParseFloat, which takes NaN in any case; prom-client writes
  // an empty event-loop-lag summary's mean as `Nan`.
  if (text.toLowerCase() === 'nan') return Number.NaN;
  if (!/^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(text)) throw new Error(`bad sample value ${JSON.stringify(text)} in: ${line}`);
  return Number(text);
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`bad labels in: ${line}`);
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name ${JSON.stringify(name)} in: ${line}`);
    if (name in labels) throw new Error(`label ${name} twice in: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value in: ${line}`);
    let value = '';
    let j = eq + 2;
    for (;;) {
      if (j >= text.length) throw new Error(`unterminated label value in: ${line}`);
      const c = text[j]!;
      if (c === '\\') {
        const next = text[j + 1];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`bad escape in: ${line}`);
        j += 2;
      } else if (c === '"') {
        j++;
        break;
      } else {
        value += c;
        j++;
      }
    }
    labels[name] = value;
    if (j === text.length) break;
    if (text[j] !== ',') throw new Error(`expected , between labels in: ${line}`);
    i = j + 1;
  }
  return labels;
}

/** The family a sample name belongs to, given the declared types. */
function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length);
      const type = types.get(base);
      if (type === 'histogram' || (type === 'summary' && suffix !== '_bucket')) return base;
    }
  }
  return undefined;
}

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const samples: Sample[] = [];
  const seen = new Set<string>();
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) {
        if (/^# (HELP|TYPE)\b/.test(line)) throw new Error(`bad comment line: ${line}`);
        continue;
      }
      const [, kind, name, rest] = m;
      if (!NAME.test(name!)) throw new Error(`bad metric name in: ${line}`);
      if (kind === 'TYPE') {
        if (!TYPES.has(rest!)) throw new Error(`bad type in: ${line}`);
        if (types.has(name!)) throw new Error(`TYPE twice for ${name}`);
        if (samples.some((s) => familyOf(s.name, new Map([[name!, rest!]])) === name)) throw new Error(`TYPE after samples of ${name}`);
        types.set(name!, rest!);
      } else {
        if (helps.has(name!)) throw new Error(`HELP twice for ${name}`);
        helps.add(name!);
      }
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const [, name, labelText, valueText] = m;
    const family = familyOf(name!, types);
    if (!family) throw new Error(`sample of an undeclared family: ${line}`);
    const labels = labelText ? parseLabels(labelText, line) : {};
    const series = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(series)) throw new Error(`series twice: ${line}`);
    seen.add(series);
    samples.push({ name: name!, labels, value: parseValue(valueText!, line) });
  }
  const includes = (s: Sample, labels: Record<string, string>) => Object.entries(labels).every(([k, v]) => s.labels[k] === v);
  return {
    types,
    samples,
    find: (name, labels = {}) => samples.filter((s) => s.name === name && includes(s, labels)),
    value(name, labels = {}) {
      const found = samples.filter(
        (s) => s.name === name && includes(s, labels) && Object.keys(s.labels).length === Object.keys(labels).length,
      );
      if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
      return found[0]?.value;
    },
  };
}
