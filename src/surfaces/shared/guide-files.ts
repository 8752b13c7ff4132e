// The written guide: README.md and every docs/*.md, read from the repository once at start. The
// front door serves these files and the MCP docs tools search them; nothing else is ever read.
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
