import type { Static, TObject, TSchema } from 'typebox';
import type { Replayable } from '../domain/idempotency/idempotency.ts';
import type { JsonText } from '../platform/json-text.ts';
import type { Validator } from '../platform/validators.ts';
import type { RatePolicy } from '../policy.ts';
import type { InputValidator } from './shared/inputs.ts';

/** What an operation does, which decides its verbs: GET (200) or POST (201), and its MCP hints. */
export type Effect = 'read' | 'create';

/** What every surface reads of an operation: everything but how it runs. */
export interface OperationInfo {
  /** operationId in OpenAPI and the MCP tool name. */
  readonly name: string;
  /**
   * read: only reads (GET; readOnlyHint, idempotentHint); create: only creates, nothing is
   * overwritten or deleted (POST answered 201; destructiveHint false, and idempotentHint false:
   * a tool call has no Idempotency-Key, so every call creates again).
   */
  readonly effect: Effect;
  /** The REST route, its path relative to the surface's base (e.g. `/playbook-opt-ins`); absent for a tool that is on MCP only. */
  readonly rest?: { readonly path: string };
  /**
   * MCP only: `description`, the tool's description where it differs from the REST one (advice
   * that only applies to HTTP), written out in full; `ui`, the `ui://` resource of an MCP Apps
   * view that shows the tool's result (the endpoint serves that resource).
   */
  readonly mcp?: { readonly description?: string; readonly ui?: string };
  readonly title: string;
  readonly description: string;
  readonly input: TObject;
  readonly output: TSchema;
  /** The MCP tool reaches outside hubops (fetches a URL, publishes to social networks): its openWorldHint. Default false. */
  readonly openWorld?: boolean;
  /** An extra limit for this operation, on top of the surface's (e.g. 20/min on a report). */
  readonly extraLimit?: RatePolicy;
  /** True when the read declares a validator: a conditional request is answered 304 before the handler runs, and before the limits count it. */
  readonly conditional?: boolean;
  /** The read's validator carries a change time: its answers carry Last-Modified, and If-Modified-Since applies. */
  readonly lastModified?: boolean;
  /** The REST answer's media type where it is not JSON (a CSV export, served by its own route); OpenAPI documents it. */
  readonly mediaType?: string;
}

/**
 * One API operation, declared once and mounted as a REST route, an OpenAPI path and an MCP tool.
 * The input schema validates query strings and tool arguments alike; the output schema documents
 * REST and becomes the tool's outputSchema. The handler's input type is the schema's: it is kept
 * behind `prepare`, which validates first, so a list of operations with different schemas is one
 * type (`Operation<Ctx>`).
 */
export interface Operation<Ctx> extends OperationInfo {
  /** Validates `rawInput` with the app's `inputs` (a copy; defaults filled in, cursors read; throws 400 naming every bad field), then gives the call to make. */
  prepare(rawInput: unknown, inputs: InputValidator): PreparedCall<Ctx>;
}

/** A validated call of an operation: run it, or (a read with a validator) first ask what its answer would be current as of. */
export interface PreparedCall<Ctx> {
  (ctx: Ctx): Promise<unknown>;
  /** The read's current validator, from what the database already knows and without building the answer; absent when the operation has none. */
  validator?: (ctx: Ctx) => Promise<Validator>;
}

/** The HTTP method of an operation's REST route: reads are GETs, creations POSTs. */
export function verbOf(op: OperationInfo): 'GET' | 'POST' {
  return op.effect === 'read' ? 'GET' : 'POST';
}

/** An operation as written: its handler typed by its schemas. */
export interface OperationSpec<Ctx, In extends TObject, Out extends TSchema> extends OperationInfo {
  readonly input: In;
  readonly output: Out;
  handler(ctx: Ctx, input: Static<In>): Promise<Static<Out> | JsonText | Replayed<Static<Out>> | Validated<Static<Out> | JsonText>>;
  /**
   * A read's validator, computed cheaply (version counters, the page's keys) so that a conditional
   * request that matches is answered 304 without running the handler. The handler must then
   * return `Validated` with the validator of the data it answered from: the same function of the
   * same state, so the two agree.
   */
  validator?(ctx: Ctx, input: Static<In>): Promise<Validator>;
}

/** A read's answer with the validator of the data it was built from (its ETag, maybe Last-Modified). */
export class Validated<T> {
  readonly value: T;
  readonly validator: Validator;

  constructor(value: T, validator: Validator) {
    this.value = value;
    this.validator = validator;
  }
}

/** An operation's result without its wrappers (a replay mark, a validator): what MCP and the web show. */
export function resultValue(result: unknown): unknown {
  return result instanceof Replayed || result instanceof Validated ? result.value : result;
}

/** An operation's result given again for a retried request (the same idempotency key). */
export class Replayed<T> {
  readonly value: T;

  constructor(value: T) {
    this.value = value;
  }
}

/** A service's idempotent result as an operation's: marked when it is a replay (REST says so in a header). */
export function replayable<T>(result: Replayable<T>): T | Replayed<T> {
  return result.replayed ? new Replayed(result.value) : result.value;
}

/** Declares an operation with its input type inferred from the schema. */
export function defineOperation<Ctx, In extends TObject, Out extends TSchema>(spec: OperationSpec<Ctx, In, Out>): Operation<Ctx> {
  const { handler, validator, ...info } = spec;
  return {
    ...info,
    conditional: validator !== undefined,
    prepare(rawInput, inputs) {
      // Copy: defaults and cursors must not write into Fastify's query object or the tool arguments.
      const input = inputs.validate(spec.input, { ...(rawInput as object) });
      const call: PreparedCall<Ctx> = (ctx) => handler(ctx, input);
      if (validator) call.validator = (ctx) => validator(ctx, input);
      return call;
    },
  };
}

/**
 * The operation run with another context: `to` makes the context it needs from the one it is
 * given, after the input is validated (so a bad argument is reported before a refused context).
 */
export function withContext<From, To>(op: Operation<To>, to: (ctx: From) => To, changes: Partial<OperationInfo> = {}): Operation<From> {
  return {
    ...op,
    ...changes,
    prepare(rawInput, inputs) {
      const call = op.prepare(rawInput, inputs);
      const converted: PreparedCall<From> = async (ctx) => call(to(ctx));
      if (call.validator) converted.validator = async (ctx) => call.validator!(to(ctx));
      return converted;
    },
  };
}

const INTEGER_TEXT = /^(0|-?[1-9][0-9]{0,15})$/;
const NUMBER_TEXT = /^-?(0|[1-9][0-9]{0,15})(\.[0-9]{1,15})?$/;

/**
 * Query-string and path text as the types the schema declares, parsed strictly: integers only as
 * plain decimal digits (no `0x10`, `1e2`, `+5`, `05`, ` 5`, `1.0`), booleans only as `true` or
 * `false`. Anything else stays text, so validation refuses it with the field's expectation.
 */
export function fromQueryText(schema: TObject, text: Record<string, unknown>): Record<string, unknown> {
  const properties = schema.properties as Record<string, { type?: unknown }>;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(text)) {
    const type = Object.hasOwn(properties, name) ? properties[name]!.type : undefined;
    if (typeof value !== 'string') out[name] = value;
    else if (type === 'integer' && INTEGER_TEXT.test(value) && Number.isSafeInteger(Number(value))) out[name] = Number(value);
    else if (type === 'number' && NUMBER_TEXT.test(value)) out[name] = Number(value);
    else if (type === 'boolean' && (value === 'true' || value === 'false')) out[name] = value === 'true';
    else out[name] = value;
  }
  return out;
}

/** Runs an operation: validate (with the app's `inputs`), then the handler. */
export async function runOperation<Ctx>(op: Operation<Ctx>, ctx: Ctx, rawInput: unknown, inputs: InputValidator): Promise<unknown> {
  return op.prepare(rawInput, inputs)(ctx);
}
