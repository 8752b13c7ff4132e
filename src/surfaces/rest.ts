import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JsonText } from '../platform/json-text.ts';
import { runOperation, type Operation } from './operation.ts';

/**
 * Mounts operations as REST routes. The input is path parameters, query string and JSON body
 * merged (path parameters win), validated once by the operation's schema. `contextFor` does
 * authentication and anything per-request (limits); what it throws becomes the error response.
 * `settle`, when given, runs after the operation and before any answer, success or error: what
 * it throws wins (a provisional authentication refused after the fact).
 */
export function mountRest<Ctx>(
  app: FastifyInstance,
  operations: Operation<Ctx>[],
  contextFor: (request: FastifyRequest, reply: FastifyReply, op: Operation<Ctx>) => Promise<Ctx>,
  settle?: (ctx: Ctx) => Promise<void>,
): void {
  for (const op of operations) {
    app.route({
      method: op.method,
      url: op.path,
      handler: async (request, reply) => {
        const ctx = await contextFor(request, reply, op);
        const input = {
          ...(request.body && typeof request.body === 'object' ? request.body : {}),
          ...(request.query as object),
          ...(request.params as object),
        };
        const outcome = await runOperation(op, ctx, input).then(
          (value) => ({ ok: true, value }) as const,
          (error: unknown) => ({ ok: false, error }) as const,
        );
        await settle?.(ctx);
        if (!outcome.ok) throw outcome.error;
        const result = outcome.value;
        if (op.method === 'POST') reply.code(201);
        if (!(result instanceof JsonText)) return result;
        const { body, length } = result.body();
        return reply.type('application/json').header('content-length', length).send(body);
      },
    });
  }
}
