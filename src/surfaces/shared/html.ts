// What every server-rendered page needs: escaping, and a fresh nonce per response for its inline
// stylesheet (each surface's Content-Security-Policy allows only that nonce).
import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** 128 random bits, base64url: unguessable, so an injected <style> or <script> cannot carry it. */
export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** Sends a page rendered with a fresh nonce, under the headers (CSP) made for that nonce. */
export function sendPage(
  reply: FastifyReply,
  status: number,
  headers: (nonce: string) => Record<string, string>,
  render: (nonce: string) => string,
): FastifyReply {
  const nonce = newNonce();
  return reply.code(status).headers(headers(nonce)).send(render(nonce));
}
