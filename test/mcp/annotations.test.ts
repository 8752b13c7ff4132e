// What a directory review reads of our tools: each tool's title and all four annotation hints, as
// tools/list gives them to the real MCP SDK client, must be what docs/mcp.md ("Tools") says, in
// the same order; names must follow the specification's tool-name format.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { startApp } from '../support/app.ts';
import { seedEdgeWorld, type EdgeWorld } from '../support/edge-world.ts';

// MCP 2025-11-25, server/tools "Tool names": 1 to 128 characters, only A-Z a-z 0-9 _ - .
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

interface DocumentedTool {
  name: string;
  title: string;
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  why: string;
}

const HEADER = '| tool | title | read-only | destructive | idempotent | open world | why |';

/** The annotation tables of docs/mcp.md's "### Tools" section, by the line that names each server. */
async function documentedTools(): Promise<Map<string, DocumentedTool[]>> {
  const page = await readFile(new URL('../../docs/mcp.md', import.meta.url), 'utf8');
  const start = page.indexOf('\n### Tools\n');
  assert.ok(start >= 0, 'docs/mcp.md has a "### Tools" section');
  const section = page
    .slice(start + 1)
    .split(/\n(?=##+ )/)[0]!
    .split('\n');
  const tables = new Map<string, DocumentedTool[]>();
  section.forEach((line, i) => {
    if (line !== HEADER) return;
    const label = section
      .slice(0, i)
      .reverse()
      .find((l) => l.trim() !== '')!;
    const rows: DocumentedTool[] = [];
    for (const row of section.slice(i + 2)) {
      if (!row.startsWith('|')) break;
      const [name, title, readOnly, destructive, idempotent, openWorld, why] = row
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      const flag = (cell: string | undefined) => {
        assert.ok(cell === 'yes' || cell === 'no', `${name}: a hint is "yes" or "no", not ${cell}`);
        return cell === 'yes';
      };
      rows.push({
        name: name!.replace(/^`|`$/g, ''),
        title: title!,
        annotations: {
          title: title!,
          readOnlyHint: flag(readOnly),
          destructiveHint: flag(destructive),
          idempotentHint: flag(idempotent),
          openWorldHint: flag(openWorld),
        },
        why: why ?? '',
      });
    }
    tables.set(label, rows);
  });
  return tables;
}

let world: EdgeWorld;
let docs: Map<string, DocumentedTool[]>;
const clients: Client[] = [];

before(async () => {
  world = await seedEdgeWorld(await startApp({ listen: true, limiter: 'unlimited' }));
  docs = await documentedTools();
});

after(async () => {
  for (const client of clients) await client.close();
  await world?.close();
});

async function listedTools(server: 'main' | 'hub'): Promise<Tool[]> {
  const client = await (server === 'main' ? world.mcpMain() : world.mcpHub());
  clients.push(client);
  return (await client.listTools()).tools;
}

const SERVERS = [
  { server: 'main', label: 'Main server (`/mcp`):' },
  { server: 'hub', label: 'Hub MCP endpoint (`/v1/hub/mcp`):' },
] as const;

describe('tool annotations a directory review accepts', () => {
  for (const { server, label } of SERVERS) {
    test(`${label} tools/list is the documented table: names in order, titles, all four hints`, async () => {
      const documented = docs.get(label);
      assert.ok(documented && documented.length > 0, `docs/mcp.md "Tools" has a table after "${label}"`);
      const tools = await listedTools(server);
      assert.deepEqual(
        tools.map((t) => t.name),
        documented.map((d) => d.name),
        'tools/list order = the table order',
      );
      for (const [i, tool] of tools.entries()) {
        const doc: DocumentedTool = documented[i]!;
        assert.equal(tool.title, doc.title, `${tool.name} title`);
        // Exactly these five keys: no hint left to its default, nothing undocumented.
        assert.deepEqual(tool.annotations, doc.annotations, `${tool.name} annotations`);
      }
    });

    test(`${label} names follow the specification's format and are unique; the order is the same on every call`, async () => {
      const names = (await listedTools(server)).map((t) => t.name);
      for (const name of names) assert.match(name, TOOL_NAME, `${name}: 1-128 of A-Z a-z 0-9 _ - .`);
      assert.equal(new Set(names).size, names.length, 'unique within the server');
      assert.deepEqual(
        (await listedTools(server)).map((t) => t.name),
        names,
        'a second tools/list, from a second client',
      );
    });
  }

  test("the tables say why wherever a tool is anything but a read of hubops's own data", () => {
    for (const [label, rows] of docs) {
      for (const row of rows) {
        const { readOnlyHint, destructiveHint, idempotentHint, openWorldHint } = row.annotations;
        const plainRead = readOnlyHint && !destructiveHint && idempotentHint && !openWorldHint;
        if (!plainRead) assert.ok(row.why.length > 0, `${label} ${row.name}: say why`);
      }
    }
  });

  test('create_post is not idempotent over MCP, as documented: the same arguments twice create two posts', async () => {
    const client = await world.mcpMain();
    clients.push(client);
    const args = { workspaceId: 'w1', text: 'annotations: the same call twice', status: 'draft' };
    const created: string[] = [];
    for (let call = 0; call < 2; call++) {
      const result = (await client.callTool({ name: 'create_post', arguments: args })) as CallToolResult;
      assert.notEqual(result.isError, true, JSON.stringify(result.content));
      created.push((result.structuredContent as { _id: string })._id);
    }
    assert.notEqual(created[0], created[1]);
    assert.deepEqual(await world.counts(['posts']), { posts: 4 }, "the world's two posts and these two");
  });
});
