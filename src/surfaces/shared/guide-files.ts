// The written guide: README.md and every docs/*.md, read from the repository once at start. The
// docs surface serves these files and the MCP docs tools search them; nothing else is ever read.
// Served, `$BASE` in their examples becomes the server's address (servedMarkdown).
import { readdir, readFile } from 'node:fs/promises';

const REPOSITORY = new URL('../../../', import.meta.url);

export interface GuideFile {
  /** The repository path: `README.md` or `docs/<name>.md`. */
  file: string;
  /** `readme`, or the docs page's name without `.md` (`hub-api`). */
  page: string;
  /** The page's `# ` heading, else its file name. */
  title: string;
  text: string;
}

export async function readGuideFiles(): Promise<GuideFile[]> {
  const names = (await readdir(new URL('docs/', REPOSITORY)).catch(() => [] as string[])).filter((n) => /^[\w.-]+\.md$/.test(n)).sort();
  const files = ['README.md', ...names.map((n) => `docs/${n}`)];
  const read = async (file: string): Promise<GuideFile | undefined> => {
    const text = await readFile(new URL(file, REPOSITORY), 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    const page = file === 'README.md' ? 'readme' : file.slice('docs/'.length, -'.md'.length);
    return { file, page, title: /^# (.+)$/m.exec(text)?.[1]?.trim() ?? file, text };
  };
  return (await Promise.all(files.map(read))).filter((f): f is GuideFile => f !== undefined);
}

/**
 * The note each page with `$BASE` examples carries near its top; served, it says the address
 * itself. Its first words are what the docs test looks for.
 */
export const BASE_NOTE_START = '> The examples use `$BASE`';

/**
 * The markdown as served: the `$BASE` note says the address, `$BASE` (and `${BASE}`, and the
 * `BASE=http://localhost:3000` a page exports) become BASE_URL, whole-line HTML comments (the
 * docs test's annotations) go. `$BASE_URL` and the like are other variables and stay.
 */
export function servedMarkdown(markdown: string, baseUrl: string): string {
  const lines: string[] = [];
  let fence: string | undefined;
  let inNote = false;
  for (const line of markdown.split('\n')) {
    const opens = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (opens && (fence === undefined || opens.startsWith(fence))) fence = fence === undefined ? opens : undefined;
    else if (fence === undefined && /^\s*<!--.*-->\s*$/.test(line)) continue;
    // The note and its continuation lines become one line with the address.
    if (inNote && line.startsWith('>')) continue;
    inNote = fence === undefined && line.startsWith(BASE_NOTE_START);
    if (inNote) {
      lines.push(`> The examples show this server's address, <${baseUrl}>.`);
      continue;
    }
    lines.push(line);
  }
  return lines
    .join('\n')
    .replace(/\bBASE=http:\/\/localhost:3000(?![\w/])/g, `BASE=${baseUrl}`)
    .replace(/\$\{BASE\}|\$BASE(?![\w])/g, baseUrl);
}
