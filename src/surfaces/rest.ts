import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { IDEMPOTENCY_KEY } from '../domain/idempotency/idempotency.ts';
import { JsonText } from '../platform/json-text.ts';
import { JSON_MAX_DEPTH } from '../policy.ts';
import { FORBIDDEN_CHARACTER_MESSAGE, findForbiddenText } from '../platform/text.ts';
import { fromQueryText, Replayed, runOperation, verbOf, type Operation } from './operation.ts';
import { invalidRequest } from './shared/errors.ts';

/** The response header that marks a replayed result (draft-ietf-httpapi-idempotency-key-header). */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** The request's `Idempotency-Key` header; undefined when none was sent. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  return request.headers[IDEMPOTENCY_KEY.toLowerCase()] as string | undefined;
}

/**
 * Mounts operations as REST routes (those that have one). The input is path parameters, query string and JSON body
 * merged (path parameters win), validated once by the operation's schema; only the query and path
 * text is converted to the declared types (strictly), the JSON body never is. `contextFor` does
 * authentication and anything per-request (limits); what it throws becomes the error response.
 * `settle`, when given, runs after the operation and before any answer, success or error: what
 * it throws wins (a provisional authentication refused after the fact).
 */
export function mountRest<Ctx>(
  app: FastifyInstance,
  operations: readonly Operation<Ctx>[],
  contextFor: (request: FastifyRequest, reply: FastifyReply, op: Operation<Ctx>) => Promise<Ctx>,
  settle?: (ctx: Ctx) => Promise<void>,
): void {
  for (const op of operations) {
    if (!op.rest) continue;
    app.route({
      method: verbOf(op),
      url: op.rest.path,
      handler: async (request, reply) => {
        const ctx = await contextFor(request, reply, op);
        const input = {
          ...(request.body && typeof request.body === 'object' ? request.body : {}),
          ...fromQueryText(op.input, request.query as Record<string, unknown>),
          ...fromQueryText(op.input, request.params as Record<string, unknown>),
        };
        const outcome = await runOperation(op, ctx, input).then(
          (value) => ({ ok: true, value }) as const,
          (error: unknown) => ({ ok: false, error }) as const,
        );
        await settle?.(ctx);
        if (!outcome.ok) throw outcome.error;
        let result = outcome.value;
        if (result instanceof Replayed) {
          reply.header(REPLAYED_HEADER, 'true');
          result = result.value;
        }
        if (op.effect === 'create') reply.code(201);
        if (!(result instanceof JsonText)) return result;
        const { body, length } = result.body();
        return reply.type('application/json').header('content-length', length).send(body);
      },
    });
  }
}

/** True when `value` nests objects or arrays deeper than `max`. Iterative: hostile depth cannot overflow the stack. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The input rule at the door of every route, operation or not (a preValidation hook): JSON bodies
 * no deeper than JSON_MAX_DEPTH, so nothing recursive ever meets hostile nesting, and path
 * parameters, query strings and HTML form bodies without forbidden characters (platform/text.ts),
 * so none reaches SQL. JSON bodies' text is checked by each operation (validateInput), where MCP
 * tool arguments are too, so that a tool gets a tool error rather than an HTTP one.
 */
export function checkInbound(request: FastifyRequest): void {
  if (request.body !== null && typeof request.body === 'object' && nestsDeeperThan(request.body, JSON_MAX_DEPTH)) {
    throw invalidRequest([{ field: '(body)', message: `must not nest objects and arrays more than ${JSON_MAX_DEPTH} levels deep` }]);
  }
  const form = request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') ? request.body : undefined;
  for (const part of [request.params, request.query, form]) {
    const field = findForbiddenText(part);
    if (field !== undefined) throw invalidRequest([{ field, message: FORBIDDEN_CHARACTER_MESSAGE }]);
  }
}

/**
 * Which methods each registered path answers, for 405s: a request that matched no route but whose
 * path exists under other methods gets 405 with `Allow`, not 404. Fed by an onRoute hook; wildcard
 * routes (a catch-all OPTIONS, say) say nothing about which paths exist and are left out.
 */
export class RouteMethods {
  private readonly routes = new Map<string, { pattern: RegExp; methods: Set<string> }>();

  add(url: string, method: string | string[]): void {
    if (url.includes('*')) return;
    const path = url.replace(/\/+$/, '') || '/';
    let route = this.routes.get(path);
    if (!route) {
      const source = path.split(/(:[A-Za-z0-9_]+)/).map((piece) => (piece.startsWith(':') ? '[^/]+' : piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('');
      route = { pattern: new RegExp(`^${source}/?$`), methods: new Set() };
      this.routes.set(path, route);
    }
    for (const m of Array.isArray(method) ? method : [method]) route.methods.add(m);
  }

  /** The methods `path` answers (HEAD wherever GET is), sorted; empty when no route has it. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes.values()) if (route.pattern.test(path)) for (const m of route.methods) methods.add(m);
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  }
}
