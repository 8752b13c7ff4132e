// docs/cli.md's command reference, rendered from the CLI's own command table so the two cannot
// drift: `npm run docs:cli` writes it, test/cli/docs.test.ts fails when the file differs.
import { commandTable, optionHelpOf, type Command } from './cli.ts';

export const BEGIN_MARKER =
  '<!-- BEGIN GENERATED: the command reference, from src/cli/cli.ts by `npm run docs:cli`; edit there, not here -->';
export const END_MARKER = '<!-- END GENERATED -->';

/** A table cell: pipes escaped so they do not end the cell. */
const cell = (text: string) => text.replace(/\|/g, '\\|');

function usage(command: Command): string {
  return `hubops ${command.name}${command.args ? ` ${command.args}` : ''}`;
}

function section(command: Command): string {
  const options = Object.keys(command.options);
  return [
    `### \`${command.name}\``,
    '',
    '```',
    usage(command),
    '```',
    '',
    `${command.summary.charAt(0).toUpperCase()}${command.summary.slice(1)}.`,
    '',
    ...(options.length
      ? ['| option | meaning |', '|---|---|', ...options.map((name) => `| \`--${name}\` | ${cell(optionHelpOf(command, name))} |`), '']
      : []),
    `\`--json\` prints ${command.json}.`,
  ].join('\n');
}

/** The generated part of docs/cli.md, markers included. */
export function renderCommandReference(commands: readonly Command[] = commandTable()): string {
  return [
    BEGIN_MARKER,
    '',
    '| command | does |',
    '|---|---|',
    ...commands.map((c) => `| [\`${c.name}\`](#${c.name.replace(/ /g, '-')}) | ${cell(c.summary)} |`),
    '',
    ...commands.flatMap((c) => [section(c), '']),
    END_MARKER,
  ].join('\n');
}

/** `document` with its generated part replaced (the hand-written text around it kept). */
export function withCommandReference(document: string): string {
  const begin = document.indexOf(BEGIN_MARKER);
  const end = document.indexOf(END_MARKER);
  if (begin === -1 || end < begin) throw new Error(`docs/cli.md has no ${BEGIN_MARKER} … ${END_MARKER} block`);
  return `${document.slice(0, begin)}${renderCommandReference()}${document.slice(end + END_MARKER.length)}`;
}
