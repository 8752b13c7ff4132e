// What every command of the `hubops` CLI is made of (src/cli/cli.ts runs them): its declaration,
// its input and output, and the argument helpers the commands share.
import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../config.ts';
import type { Db } from '../db/database.ts';
import type { OpenedDatabase } from '../db/open.ts';
import type { AdSyncDeps } from '../domain/ad-sync/ad-account.service.ts';

/** Builds the ad-sync dependencies (sealer, platform clients) for the ad-accounts commands. */
export type AdSyncFactory = (config: Config, db: Db) => Promise<AdSyncDeps>;

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  stdin: NodeJS.ReadableStream;
  /** Tests only: the ad-accounts commands' platform clients and sealer instead of the server's (a fake platform). */
  adSync?: AdSyncFactory;
}

/** Bad usage: exit 2 with the command's usage line. */
export class UsageError extends Error {}

export interface Output {
  json: unknown;
  human: string;
}

export type Values = Record<string, string | boolean | string[] | undefined>;
export type Options = NonNullable<ParseArgsConfig['options']>;

export interface Command {
  name: string;
  /** Arguments after the command name, for help and usage errors. */
  args: string;
  summary: string;
  /** What `--json` prints, in Markdown (docs/cli.md). */
  json: string;
  /** Each option's explanation is in OPTION_HELP (help and docs/cli.md), or in optionHelp where this command gives it another meaning. */
  options: Options;
  /** This command's own explanation of an option whose OPTION_HELP meaning does not fit it (the ad-accounts commands' --account). */
  optionHelp?: Record<string, string>;
  positionals: string[];
  /** Validates the arguments (throwing UsageError) and returns the work to do with the database. */
  prepare(values: Values, positionals: string[], io: CliIo): Promise<Work>;
}

/**
 * A command's work: with the configured database, opened and migrated; or `standalone`, given only
 * the configuration, for a command that must open the database itself (restore makes a new one,
 * backup copies it without migrating it).
 */
export type Work = ((database: OpenedDatabase) => Promise<Output>) | { standalone: (config: Config) => Promise<Output> };

export function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string') throw new UsageError(`missing required option --${name}`);
  return value;
}

export function choice<T extends string>(values: Values, name: string, allowed: readonly T[], fallback?: T): T {
  const value = values[name];
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string') throw new UsageError(`missing required option --${name}`);
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`--${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  return value as T;
}

export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** Rows under a header, each column as wide as its widest cell. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows]
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
