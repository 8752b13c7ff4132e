// Rewrites the command reference in docs/cli.md from the CLI's command table (src/cli/docs.ts).
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { withCommandReference } from '../src/cli/docs.ts';

const file = path.resolve(import.meta.dirname, '../docs/cli.md');
const before = await readFile(file, 'utf8');
const after = withCommandReference(before);
await writeFile(file, after);
process.stdout.write(after === before ? 'docs/cli.md is up to date\n' : 'docs/cli.md rewritten\n');
