import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

// An MCP client as an agent host would run one: the real SDK Client and Streamable HTTP
// transport, with an OAuthClientProvider that keeps everything in memory and hands the
// authorization URL to the test (which then plays the user over HTTP).

/** In-memory OAuth state of one MCP client installation. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  readonly redirect: string;
  information: OAuthClientInformationMixed | undefined;
  current: OAuthTokens | undefined;
  readonly issuedTokens: OAuthTokens[] = [];
  readonly authorizationUrls: URL[] = [];
  readonly states: string[] = [];
  verifier = '';

  constructor(redirect: string) {
    this.redirect = redirect;
  }

  get redirectUrl(): string {
    return this.redirect;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP Test Agent',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state(): string {
    const state = randomBytes(16).toString('base64url');
    this.states.push(state);
    return state;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.information;
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.information = information;
  }

  tokens(): OAuthTokens | undefined {
    return this.current;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.current = tokens;
    this.issuedTokens.push(tokens);
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    this.authorizationUrls.push(authorizationUrl);
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }
}

export interface RecordedRequest {
  method: string;
  url: URL;
  status: number;
  /** Request body as text (JSON-RPC, form-encoded token requests, registration JSON). */
  body: string | undefined;
  /** The JSON-RPC method(s) of a POST to the MCP endpoint. */
  rpc: string[];
  headers: Headers;
}

/** A fetch that records every request the SDK makes (MCP, discovery, registration, token). */
export function recordingFetch(log: RecordedRequest[]): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    const body = typeof init?.body === 'string' ? init.body : init?.body instanceof URLSearchParams ? init.body.toString() : undefined;
    let rpc: string[] = [];
    if (body && (body.startsWith('{') || body.startsWith('['))) {
      try {
        const parsed = JSON.parse(body);
        rpc = (Array.isArray(parsed) ? parsed : [parsed]).map((m: { method?: string }) => m.method ?? '(response)');
      } catch {
        // not JSON
      }
    }
    log.push({ method: init?.method ?? 'GET', url: new URL(url), status: response.status, body, rpc, headers: response.headers });
    return response;
  };
}

export function transport(
  url: URL,
  options: { provider?: OAuthClientProvider; log?: RecordedRequest[]; token?: string },
): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(url, {
    ...(options.provider ? { authProvider: options.provider } : {}),
    ...(options.log ? { fetch: recordingFetch(options.log) } : {}),
    ...(options.token ? { requestInit: { headers: { Authorization: `Bearer ${options.token}` } } } : {}),
  });
}

export const newClient = () => new Client({ name: 'hubops-mcp-test', version: '1.0.0' });

/**
 * The SDK v2 client pinned to 2026-07-28 (server/discover, no initialize, the envelope on every
 * request), connected with a bearer token (an OAuth access token or a Hub API key).
 */
export async function modernClient(url: URL, options: { token?: string; log?: RecordedRequest[] } = {}): Promise<ModernClient> {
  const client = new ModernClient({ name: 'hubops-mcp-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(
    new ModernTransport(url, {
      ...(options.log ? { fetch: recordingFetch(options.log) } : {}),
      ...(options.token ? { requestInit: { headers: { Authorization: `Bearer ${options.token}` } } } : {}),
    }),
  );
  return client;
}

export function textOf(result: CallToolResult): string {
  const first = result.content[0];
  assert.equal(first?.type, 'text');
  return (first as { text: string }).text;
}

/** What callOk and callError need of a client: the SDK's v1 and v2 clients both have it. */
interface ToolCaller {
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>;
}

/** Calls a tool; asserts success and that its text is its structured content as JSON. */
export async function callOk(client: ToolCaller, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.notEqual(result.isError, true, `${name} failed: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, `${name} returned no structuredContent`);
  assert.deepEqual(JSON.parse(textOf(result)), result.structuredContent, `${name}: content[0].text must be the structured content as JSON`);
  return result.structuredContent;
}

/** Calls a tool that must fail with a tool error (not a protocol error); returns its text. */
export async function callError(client: ToolCaller, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.equal(result.isError, true, `${name} should have failed: ${JSON.stringify(result.content).slice(0, 300)}`);
  assert.equal(result.structuredContent, undefined);
  return textOf(result);
}

/** `r` of the per-user-client policy in a RateLimit header. */
export function remaining(headers: Headers | Record<string, unknown>): number | undefined {
  const value = headers instanceof Headers ? headers.get('ratelimit') : (headers.ratelimit as string | undefined);
  const match = value?.match(/"per-user-client";r=(\d+)/);
  return match ? Number(match[1]) : undefined;
}
