import { Writable } from 'node:stream';
import pino from 'pino';

export type LogLine = Record<string, any>;

/** A pino logger whose JSON lines are kept in `lines`, for tests that assert what is logged. */
export function captureLog(level: pino.LevelWithSilent = 'info'): { logger: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}
