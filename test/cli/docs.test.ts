import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { commandTable, OPTION_HELP } from '../../src/cli/cli.ts';
import { BEGIN_MARKER, END_MARKER, renderCommandReference, withCommandReference } from '../../src/cli/docs.ts';

// docs/cli.md's command reference is rendered from the command table the CLI runs, so the
// documentation cannot promise a command, an option or an output the CLI does not have.

const DOC = path.resolve(import.meta.dirname, '../../docs/cli.md');

test('docs/cli.md is what `npm run docs:cli` writes from the command table', async () => {
  const document = await readFile(DOC, 'utf8');
  assert.equal(document, withCommandReference(document), 'docs/cli.md differs from the command table: run npm run docs:cli');
});

test('every option of every command is explained, and every command is in the reference', () => {
  const reference = renderCommandReference();
  for (const command of commandTable()) {
    assert.ok(reference.includes(`### \`${command.name}\``), command.name);
    for (const option of Object.keys(command.options))
      assert.ok(OPTION_HELP[option], `--${option} of ${command.name} has no OPTION_HELP entry`);
  }
});

test('the hand-written text around the reference is kept; a document without the markers is refused', () => {
  const document = `intro\n${BEGIN_MARKER}\nstale\n${END_MARKER}\noutro\n`;
  const rewritten = withCommandReference(document);
  assert.ok(rewritten.startsWith(`intro\n${BEGIN_MARKER}`) && rewritten.endsWith(`${END_MARKER}\noutro\n`));
  assert.ok(!rewritten.includes('stale'));
  assert.throws(() => withCommandReference('no markers'), /no .* block/);
});
