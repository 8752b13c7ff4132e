import http from 'node:http';
import type { AddressInfo } from 'node:net';

// A loopback reverse proxy that forwards what a documented nginx or Caddy configuration forwards,
// the way each does by default (docs/operations.md "Behind a reverse proxy"; no nginx or Caddy
// binary is needed):
// - nginx sends `Host: $proxy_host` (the upstream's address, not the public one) and
//   `Connection: close`, and adds X-Forwarded-For only where a location sets
//   `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for` (the client's header, then the
//   address it came from) — https://nginx.org/en/docs/http/ngx_http_proxy_module.html#proxy_set_header;
// - Caddy passes Host through and sets X-Forwarded-For (the address the client came from, a
//   client's own value dropped), X-Forwarded-Proto and X-Forwarded-Host —
//   https://caddyserver.com/docs/caddyfile/directives/reverse_proxy#defaults.
// Anything no location matches is another site's: 404.

export type ProxyFlavour = 'nginx' | 'caddy';

export interface ProxyRoute {
  /** A path prefix, or with `exact` the whole path. */
  path: string;
  exact: boolean;
  /** nginx: the location appends the client's address to X-Forwarded-For (Caddy always does). */
  forwardsFor: boolean;
}

/**
 * The locations of a documented configuration: nginx `location [=] PATH { … }`; Caddy
 * `handle PATH { … }` or `handle @NAME { … }` with `@NAME path PATH…`.
 */
export function documentedRoutes(config: string, flavour: ProxyFlavour): ProxyRoute[] {
  if (flavour === 'nginx')
    return [...config.matchAll(/location\s+(=\s*)?(\S+)\s*\{([^}]*)\}/g)].map(([, exact, path, body]) => ({
      path: path!,
      exact: exact !== undefined,
      forwardsFor: /proxy_set_header\s+X-Forwarded-For\s+\$proxy_add_x_forwarded_for;/i.test(body!),
    }));
  const named = new Map([...config.matchAll(/^\s*(@\S+)\s+path\s+(.+)$/gm)].map(([, name, paths]) => [name!, paths!.trim().split(/\s+/)]));
  return [...config.matchAll(/handle\s+(\S+)\s*\{/g)]
    .flatMap(([, matcher]) => named.get(matcher!) ?? [matcher!])
    .map((path) => ({ path: path.replace(/\*$/, ''), exact: !path.endsWith('*'), forwardsFor: true }));
}

export interface ReverseProxy {
  /** Where clients reach it, e.g. http://127.0.0.1:41234. */
  origin: string;
  /** Where it forwards to; set once the upstream listens. */
  upstream: URL | undefined;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

export async function startReverseProxy(flavour: ProxyFlavour, routes: ProxyRoute[]): Promise<ReverseProxy> {
  const proxy: ReverseProxy = { origin: '', upstream: undefined, close: async () => {} };
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]!;
    // nginx takes the longest matching prefix (an exact match first); any match forwards alike here.
    const route = routes.find((r) => (r.exact ? path === r.path : path.startsWith(r.path)));
    if (!route || !proxy.upstream) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not ours');
      return;
    }
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(request.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
    const from = request.socket.remoteAddress!;
    if (flavour === 'nginx') {
      headers.host = proxy.upstream.host;
      headers.connection = 'close';
      if (route.forwardsFor)
        headers['x-forwarded-for'] = request.headers['x-forwarded-for'] ? `${request.headers['x-forwarded-for']}, ${from}` : from;
    } else {
      headers['x-forwarded-for'] = from;
      headers['x-forwarded-proto'] = 'http';
      headers['x-forwarded-host'] = request.headers.host;
    }
    const forwarded = http.request(proxy.upstream, { method: request.method, path: request.url, headers, agent: false }, (answer) => {
      const back: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(name)) back[name] = value;
      response.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(response);
    });
    forwarded.on('error', () => {
      if (!response.headersSent) response.writeHead(502).end('bad gateway');
      else response.destroy();
    });
    request.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}
