// The repository's markdown as HTML for /docs: markdown-it with raw HTML off (every `<tag>` in a
// page is shown as text, never passed through) and its link check on (no javascript:, vbscript:,
// file: or data: URL but images'), so a page cannot carry script whatever it says. Links between
// pages are resolved the way GitHub resolves them, onto the URLs /docs serves; a repository file
// /docs does not serve is named, not linked. `$BASE` in the examples becomes this server's address.
import path from 'node:path';
import MarkdownIt from 'markdown-it';
import { servedMarkdown } from '../shared/guide-files.ts';
import { escapeHtml as h } from '../shared/html.ts';

export { BASE_NOTE_START, servedMarkdown } from '../shared/guide-files.ts';

/** Where a repository file is served, e.g. `docs/cli.md` → `/docs/cli.md`; undefined: not served. */
export type Locate = (repositoryPath: string) => string | undefined;

export interface RenderOptions {
  /** The page's repository path, `README.md` or `docs/<name>.md`: relative links start from it. */
  file: string;
  /** This server's public address (BASE_URL), for `$BASE`. */
  baseUrl: string;
  locate: Locate;
}

export interface Rendered {
  html: string;
  /** The page's `##` headings, for its table of contents. */
  sections: { id: string; text: string }[];
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens (test/docs/links.test.ts). */
export function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false });

interface DocEnv {
  options: RenderOptions;
  seen: Map<string, number>;
  sections: { id: string; text: string }[];
}

/** A link's target on this server, or undefined when it names a repository file /docs does not serve. */
function resolve(target: string, options: RenderOptions): string | undefined {
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return target; // absolute: already checked by validateLink
  if (target.startsWith('#')) return target;
  const [file = '', anchor] = target.split('#', 2) as [string, string | undefined];
  const repositoryPath = path.posix.normalize(path.posix.join(path.posix.dirname(options.file), decode(file)));
  if (repositoryPath.startsWith('../') || path.posix.isAbsolute(repositoryPath)) return undefined;
  const url = options.locate(repositoryPath);
  if (url === undefined) return undefined;
  return anchor === undefined ? url : `${url}#${anchor}`;
}

const rules = markdown.renderer.rules;

rules.link_open = (tokens, i, opts, env, self) => {
  const token = tokens[i]!;
  const href = String(token.attrGet('href') ?? '');
  const resolved = resolve(href, (env as unknown as DocEnv).options);
  if (resolved === undefined) {
    // Paired with its link_close below: the text stays, naming the file in the repository.
    token.meta = { ...token.meta, unlinked: true };
    const close = tokens.slice(i).find((t) => t.type === 'link_close' && t.level === token.level);
    if (close) close.meta = { ...close.meta, unlinked: true };
    return `<span class="repo-file" title="${h(`${href} in the repository`)}">`;
  }
  token.attrSet('href', resolved);
  if (/^https?:/i.test(resolved)) token.attrSet('rel', 'noopener noreferrer');
  return self.renderToken(tokens, i, opts);
};

rules.link_close = (tokens, i, opts, _env, self) => (tokens[i]!.meta?.unlinked ? '</span>' : self.renderToken(tokens, i, opts));

rules.image = (tokens, i, opts, env) => {
  const token = tokens[i]!;
  const src = resolve(String(token.attrGet('src') ?? ''), (env as unknown as DocEnv).options);
  const alt = token.children ? markdown.renderer.renderInlineAsText(token.children, opts, env) : token.content;
  if (src === undefined) return `<span class="repo-file">${h(alt)}</span>`;
  return `<a class="image" href="${h(src)}"><img src="${h(src)}" alt="${h(alt)}" loading="lazy"></a>`;
};

rules.heading_open = (tokens, i, _opts, renderEnv) => {
  const env = renderEnv as unknown as DocEnv;
  const token = tokens[i]!;
  const inline = tokens[i + 1]!;
  const text = (inline.children ?? []).map((c) => (c.type === 'text' || c.type === 'code_inline' ? c.content : '')).join('');
  const base = slug(text.trim());
  const n = env.seen.get(base) ?? 0;
  env.seen.set(base, n + 1);
  const id = n === 0 ? base : `${base}-${n}`;
  token.meta = { id };
  if (token.tag === 'h2') env.sections.push({ id, text });
  return `<${token.tag} id="${h(id)}">`;
};

rules.heading_close = (tokens, i) => {
  const token = tokens[i]!;
  // The heading_open two tokens back holds the id.
  const id = (tokens[i - 2]?.meta as { id?: string } | undefined)?.id ?? '';
  return `<a class="anchor" href="#${h(id)}" aria-label="Link to this section">#</a></${token.tag}>\n`;
};

// An address of this server in code (`$BASE/app` once served) is also a link to it.
rules.code_inline = (tokens, i, _opts, env) => {
  const content = tokens[i]!.content;
  const code = `<code>${h(content)}</code>`;
  const { baseUrl } = (env as unknown as DocEnv).options;
  return /^\S+$/.test(content) && (content === baseUrl || content.startsWith(`${baseUrl}/`)) ? `<a href="${h(content)}">${code}</a>` : code;
};

// Wide tables scroll inside their own box, never the page.
rules.table_open = () => '<div class="table-scroll"><table>\n';
rules.table_close = () => '</table></div>\n';

/** One page of the repository's markdown as an HTML fragment, with its sections. */
export function renderDoc(source: string, options: RenderOptions): Rendered {
  const env: DocEnv = { options, seen: new Map(), sections: [] };
  return {
    html: markdown.render(servedMarkdown(source, options.baseUrl), env as unknown as Record<string, unknown>),
    sections: env.sections,
  };
}
