import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { IDEMPOTENCY_KEY } from '../domain/idempotency/idempotency.ts';
import { JsonText } from '../platform/json-text.ts';
import { JSON_MAX_DEPTH } from '../policy.ts';
import { FORBIDDEN_CHARACTER_MESSAGE, findForbiddenText } from '../platform/text.ts';
import {
  conditionsOf,
  entityTagOfBody,
  evaluateConditions,
  representationTag,
  validatorHeaders,
  type ContentCoding,
  type Validator,
} from '../platform/validators.ts';
import { fromQueryText, Replayed, Validated, verbOf, type Operation, type PreparedCall } from './operation.ts';
import { negotiateCoding } from './shared/compression.ts';
import { ApiError, invalidRequest } from './shared/errors.ts';
import type { InputValidator } from './shared/inputs.ts';

/** The response header that marks a replayed result (draft-ietf-httpapi-idempotency-key-header). */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** The request's `Idempotency-Key` header; undefined when none was sent. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  return request.headers[IDEMPOTENCY_KEY.toLowerCase()] as string | undefined;
}

/**
 * What a surface does around its operations' REST routes. `admitted` authenticates, makes the
 * context and anything per-request (limits), runs `work` with it, and gives back what work
 * returns or throws only once the caller is confirmed: a check that rode along with work's
 * queries (a known key's verdict) is settled before anything is answered, and what it throws
 * wins. What `admitted` throws becomes the error response. With `charge: false` (a conditional
 * read that its validator may answer 304) it leaves the limits out: the request is then either
 * charged (`charge`, its conditions did not match) or answered 304 (`notModified`).
 */
export interface RestSurface<Ctx> {
  /** The surface's clock (If-Modified-Since in the future is ignored); default the system's. */
  now?(): Date;
  /** The app's validation of operation input (its formats; its cursor key). */
  inputs: InputValidator;
  admitted<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    op: Operation<Ctx>,
    options: { charge: boolean },
    work: (ctx: Ctx) => Promise<T>,
  ): Promise<T>;
  /** Counts a request that `admitted` did not (its conditions did not match); throws 429 when over a limit. */
  charge?(ctx: Ctx, reply: FastifyReply, op: Operation<Ctx>): Promise<void>;
  /** A request answered 304: counted as a conditional hit, not against the limits (`charged`: give back what `admitted` counted). */
  notModified?(ctx: Ctx, reply: FastifyReply, op: Operation<Ctx>, charged: boolean): Promise<void>;
}

/**
 * The caching headers of a read that carries a validator: the caller's own HTTP cache may keep
 * it if it revalidates every time (which is what makes a client library's cache send
 * If-None-Match for it); no shared cache may, and a cache keeps one copy per credential.
 * `must-revalidate` is what lets a cache store an answer to a request with Authorization at all
 * (RFC 9111 §3.5), a rule undici's cache interceptor applies to private caches too
 * (undici lib/handler/cache-handler.js, canCacheResponse).
 */
export const REVALIDATE = { 'cache-control': 'private, no-cache, must-revalidate', vary: 'Authorization' };

/** What an operation's route answers, and the context it ran in. */
type Answer<Ctx> = { kind: 'result'; ctx: Ctx; value: unknown } | { kind: 'not-modified'; ctx: Ctx; validator: Validator };

/** 412: an If-Match (or If-Unmodified-Since) that the current answer does not meet (RFC 9110 §13.1.1). */
const preconditionFailed = () =>
  new ApiError(
    412,
    'precondition_failed',
    'If-Match names no ETag of the current answer (or it changed after If-Unmodified-Since): fetch it again without the condition.',
  );

/**
 * Mounts operations as REST routes (those that have one). The input is path parameters, query string and JSON body
 * merged (path parameters win), validated once by the operation's schema; only the query and path
 * text is converted to the declared types (strictly), the JSON body never is.
 *
 * Every read carries a strong ETag: its validator's (from what the database knows), or else a hash
 * of its body. A conditional read (If-None-Match, If-Modified-Since) whose operation declares a
 * validator is compared before the handler runs, and before the limits count it; one that only has
 * a body hash is compared once the body is built, and its charge given back.
 */
export function mountRest<Ctx>(app: FastifyInstance, operations: readonly Operation<Ctx>[], surface: RestSurface<Ctx>): void {
  for (const op of operations) {
    if (!op.rest) continue;
    app.route({
      method: verbOf(op),
      url: op.rest.path,
      handler: async (request, reply) => {
        const conditions = op.effect === 'read' ? conditionsOf(request.headers, surface.now?.() ?? new Date()) : undefined;
        const early = conditions !== undefined && op.conditional === true;
        // The coding the compression step will answer in, which names the representation (its tag).
        const coding = negotiateCoding(request.headers['accept-encoding']);
        const answer = async (ctx: Ctx): Promise<Answer<Ctx>> => {
          const input = {
            ...(request.body && typeof request.body === 'object' ? request.body : {}),
            ...fromQueryText(op.input, request.query as Record<string, unknown>),
            ...fromQueryText(op.input, request.params as Record<string, unknown>),
          };
          let call: PreparedCall<Ctx>;
          try {
            call = op.prepare(input, surface.inputs);
          } catch (error) {
            // Refused input is charged like any request: only a 304 is free.
            if (early) await surface.charge?.(ctx, reply, op);
            throw error;
          }
          if (early) {
            const validator = await call.validator?.(ctx);
            const verdict = validator ? evaluateConditions(conditions, validator, representationTag(validator, coding)) : 'full';
            if (verdict === 'not-modified') return { kind: 'not-modified', ctx, validator: validator! };
            await surface.charge?.(ctx, reply, op);
            if (verdict === 'precondition-failed') throw preconditionFailed();
          }
          return { kind: 'result', ctx, value: await call(ctx) };
        };
        // Nothing below runs before the caller is confirmed.
        const outcome = await surface.admitted(request, reply, op, { charge: !early }, answer);
        const { ctx } = outcome;
        if (outcome.kind === 'not-modified') {
          await surface.notModified?.(ctx, reply, op, false);
          return notModified(reply, outcome.validator, coding);
        }
        let result = outcome.value;
        if (result instanceof Replayed) {
          reply.header(REPLAYED_HEADER, 'true');
          result = result.value;
        }
        if (op.effect === 'create') {
          reply.code(201);
          return result instanceof JsonText ? sendJsonText(reply, result) : result;
        }
        let validator: Validator | undefined;
        if (result instanceof Validated) {
          validator = result.validator;
          result = result.value;
        }
        const body = result instanceof JsonText ? result : new JsonText(JSON.stringify(result));
        validator ??= { etag: entityTagOfBody(body.parts) };
        const tag = representationTag(validator, coding);
        const verdict = conditions ? evaluateConditions(conditions, validator, tag) : 'full';
        if (verdict === 'precondition-failed') throw preconditionFailed();
        if (verdict === 'not-modified') {
          await surface.notModified?.(ctx, reply, op, true);
          return notModified(reply, validator, coding);
        }
        reply.headers({ ...validatorHeaders(validator, tag), ...REVALIDATE });
        return sendJsonText(reply, body);
      },
    });
  }
}

/**
 * Serves a JSON document fixed at startup (an OpenAPI document, an index) at `url` with its
 * strong ETag, answering a matching conditional GET with 304. Public: any cache may keep it, and
 * must ask again before reusing it (a deploy changes it).
 */
export function serveDocument(app: FastifyInstance, url: string, document: unknown): void {
  const body = new JsonText(JSON.stringify(document));
  const validator = { etag: entityTagOfBody(body.parts) };
  const caching = { 'cache-control': 'public, no-cache' };
  app.get(url, async (request, reply) => {
    const conditions = conditionsOf(request.headers, new Date());
    const tag = representationTag(validator, negotiateCoding(request.headers['accept-encoding']));
    const verdict = conditions ? evaluateConditions(conditions, validator, tag) : 'full';
    if (verdict === 'precondition-failed') throw preconditionFailed();
    reply.headers({ ...validatorHeaders(validator, tag), ...caching });
    return verdict === 'not-modified' ? reply.code(304).send() : sendJsonText(reply, body);
  });
}

function sendJsonText(reply: FastifyReply, text: JsonText): FastifyReply {
  const { body, length } = text.body();
  return reply.type('application/json').header('content-length', length).send(body);
}

/** 304: no body; the validators the 200 would carry: the tag of the representation the request selects (RFC 9110 §15.4.5). */
function notModified(reply: FastifyReply, validator: Validator, coding: ContentCoding | undefined): FastifyReply {
  return reply
    .code(304)
    .headers({ ...validatorHeaders(validator, representationTag(validator, coding)), ...REVALIDATE })
    .send();
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
 * so none reaches SQL. JSON bodies' text is checked by each operation (InputValidator), where MCP
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
      const source = path
        .split(/(:[A-Za-z0-9_]+)/)
        .map((piece) => (piece.startsWith(':') ? '[^/]+' : piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('');
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
