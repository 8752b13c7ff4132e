import { Type } from 'typebox';
import type { DocIndex } from './docs.ts';
import { DomainError, notFound } from '../../platform/errors.ts';
import { hubOperationsFor, type HubContext } from '../hub-api/operations.ts';
import type { MainContext } from '../main-api/context.ts';
import { mainOperations } from '../main-api/operations.ts';
import { defineOperation, withContext, type Operation } from '../operation.ts';
import type { ReportCaches } from '../shared/report-caches.ts';
import { addMediaOperation } from './add-media.ts';

// The main MCP server's tools. Wherever a REST operation exists the tool IS that declaration
// (same name, schemas, validation and handler), run with an MCP context that extends the main
// API's. On top: the docs tools, the Hub API's three hub-wide operations mapped onto the token's
// hub, and add_media (the JSON counterpart of the multipart POST /media).

/** What every main MCP tool runs with: the main API's context plus what the extra tools need. */
export interface McpMainContext extends MainContext {
  caches: ReportCaches;
  /** The documentation corpus, built on first use. */
  docs(): Promise<DocIndex>;
}

const HUB_WIDE_ERROR = 'hub_wide_access_required';

/**
 * The Hub API's view of the caller's hub, for the hub-wide paid reports. Tenancy rule: those
 * reports cover every workspace of the hub, so they need a hub admin acting across the whole hub
 * (consent: "the whole hub"). A token bound to one workspace — and a member's, always — is
 * refused with a tool error that says what to do instead.
 */
function hubContextOf(ctx: McpMainContext, tool: string): HubContext {
  const { caller } = ctx;
  if (caller.role !== 'hub_admin' || caller.workspace !== null) {
    const bound = caller.workspace ? `bound to the workspace ${caller.workspace.id}` : 'not a hub admin’s';
    throw new DomainError(
      'forbidden',
      `${tool} reports on every workspace of the hub, and this token is ${bound}. Hub-wide figures need a hub admin who chose "the whole hub" when connecting; for your own workspace use paid_analytics, list_playbooks and list_posts.`,
      { code: HUB_WIDE_ERROR },
    );
  }
  return { db: ctx.db, clock: ctx.clock, hubId: caller.hub.id, caches: ctx.caches };
}

/** A Hub API operation as a main MCP tool: run on the token's hub, hub-wide tokens only. */
function hubWide(op: Operation<HubContext>): Operation<McpMainContext> {
  return withContext(op, (ctx: McpMainContext) => hubContextOf(ctx, op.name), {
    rest: undefined, // a Hub API route, not one of the main API
    description: `${op.description} Hub-wide: needs a hub admin's token granted for the whole hub; a token bound to one workspace gets a ${HUB_WIDE_ERROR} error.`,
  });
}

const DocSourceSchema = Type.Enum(['guide', 'openapi'], {
  description:
    'guide: the README and docs pages (connecting, OAuth, limits, errors, decisions); openapi: the REST operations of the main API and the Hub API.',
});

// MCP only: no REST route.
const docsOperations: Operation<McpMainContext>[] = [
  defineOperation({
    name: 'search_docs',
    effect: 'read',
    title: 'Search the hubops documentation',
    description: [
      "Searches hubops's own documentation: the guide — the README and the docs pages (connecting, OAuth, tenancy, limits, errors, what each record means) and both OpenAPI documents (the main API at /openapi.json and the Hub API at /v1/hub/openapi.json, one entry per operation with its parameters and response schema, plus an overview of each).",
      'Give a few keywords (e.g. "schedule post instagram limit", "spend freshness", "refresh token"); results are ranked, each with an id to pass to read_doc. Without a query it lists every document.',
    ].join(' '),
    input: Type.Object({
      query: Type.Optional(Type.String({ maxLength: 200, description: 'Keywords. Leave out to list every document (id and title).' })),
      source: Type.Optional(DocSourceSchema),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 8, description: 'Results, 1 to 50 (ignored when listing).' })),
    }),
    output: Type.Object({
      hits: Type.Array(
        Type.Object({
          id: Type.String({ description: 'Pass to read_doc.' }),
          title: Type.String(),
          source: DocSourceSchema,
          snippet: Type.String({ description: 'The text around the first match (empty when listing).' }),
          score: Type.Number({ description: 'Relevance; higher is better (0 when listing).' }),
        }),
      ),
      totalDocuments: Type.Integer({ description: 'Documents in the corpus.' }),
    }),
    handler: async (ctx: McpMainContext, input) => {
      const index = await ctx.docs();
      const hits = input.query?.trim()
        ? index.search(input.query, { limit: input.limit ?? 8, source: input.source })
        : index.list(input.source).map((d) => ({ ...d, snippet: '', score: 0 }));
      return { hits, totalDocuments: index.size };
    },
  }),
  defineOperation({
    name: 'read_doc',
    effect: 'read',
    title: 'Read a hubops document',
    description:
      'The full text of one document found with search_docs: a guide section, an API overview, or one REST operation (method and URL, parameters, request body and response schema).',
    input: Type.Object({
      id: Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'A document id from search_docs, e.g. readme/quick-start, hub-api/limits or openapi-main/list_posts.',
      }),
    }),
    output: Type.Object({ id: Type.String(), title: Type.String(), source: DocSourceSchema, text: Type.String() }),
    handler: async (ctx: McpMainContext, input) => {
      const entry = (await ctx.docs()).read(input.id);
      if (!entry) throw notFound(`No document ${input.id}. Call search_docs (with no query to list them all) for valid ids.`);
      return entry;
    },
  }),
];

/** Tool names by group, in the order tools/list gives them (docs/mcp.md lists the same). */
export const TOOL_GROUPS = {
  Account: ['whoami', 'list_workspaces', 'get_workspace', 'list_hubs'],
  Docs: ['search_docs', 'read_doc'],
  Organic: ['list_channels', 'list_posts', 'get_post', 'create_post', 'organic_analytics', 'google_review_summaries'],
  Paid: ['paid_analytics', 'list_playbooks', 'list_playbook_opt_ins', 'get_opt_in_summary', 'get_spend_by_workspace'],
  Media: ['list_media', 'get_media', 'add_media'],
} as const;

function assemble(): Operation<McpMainContext>[] {
  const all = new Map<string, Operation<McpMainContext>>();
  for (const op of mainOperations) all.set(op.name, op);
  for (const op of docsOperations) all.set(op.name, op);
  for (const op of hubOperationsFor('per user and client')) all.set(op.name, hubWide(op));
  all.set(addMediaOperation.name, addMediaOperation);

  const ordered = Object.values(TOOL_GROUPS)
    .flat()
    .map((name) => {
      const op = all.get(name);
      if (!op) throw new Error(`MCP tool ${name} has no operation`);
      all.delete(name);
      return op;
    });
  // Any main API operation not placed in a group above still becomes a tool (REST and MCP never drift).
  return [...ordered, ...all.values()];
}

export const mainMcpTools: readonly Operation<McpMainContext>[] = assemble();
