import { readFileSync } from 'node:fs';

/** The package's version: package.json is its one source (OpenAPI documents, MCP server info, `hubops --version`). */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;
