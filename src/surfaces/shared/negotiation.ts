// Which representation a request asked for, when one URL serves people and programs alike.

/**
 * Whether the Accept header ranks HTML above JSON (or markdown). Browsers name text/html first;
 * curl sends `*∕*` and API clients application/json, which get the program's answer. A tie goes to HTML.
 */
export function prefersHtml(accept: string | undefined): boolean {
  let html = 0;
  let other = 0;
  for (const part of (accept ?? '').split(',')) {
    const [type = '', ...params] = part
      .trim()
      .toLowerCase()
      .split(';')
      .map((p) => p.trim());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (!(weight >= 0 && weight <= 1)) continue;
    if (type === 'text/html' || type === 'application/xhtml+xml') html = Math.max(html, weight);
    else if (type === 'application/json' || type === 'application/*' || type === 'text/markdown' || type === '*/*')
      other = Math.max(other, weight);
  }
  return html > 0 && html >= other;
}
