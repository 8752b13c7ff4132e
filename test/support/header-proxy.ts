import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A reverse proxy on 127.0.0.1 that adds fixed headers to every request it forwards, for a
// client that cannot be given a credential (the conformance suite's server runner takes a URL
// only). It stands in for the target: a Host or Origin naming the proxy is rewritten to name the
// target, so the target sees what a client talking to it directly would send; any other Host or
// Origin (a DNS-rebinding attempt) passes unchanged, as do method, path and body. The response
// streams back as it comes (SSE included).

export interface HeaderProxy {
  /** `http://127.0.0.1:<port>`: the target's paths are served under it. */
  origin: string;
  close(): Promise<void>;
}

export async function headerProxy(target: string, headers: Record<string, string>): Promise<HeaderProxy> {
  const to = new URL(target);
  let self = '';
  const server: Server = createServer((incoming, outgoing) => {
    const sent = { ...incoming.headers, ...headers };
    if (sent.host === self) sent.host = to.host;
    if (sent.origin === `http://${self}`) sent.origin = to.origin;
    const forwarded = request(
      { host: to.hostname, port: to.port, method: incoming.method, path: incoming.url, headers: sent },
      (response) => {
        outgoing.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(outgoing);
      },
    );
    forwarded.on('error', (error) => {
      if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'text/plain' });
      outgoing.end(`proxy: ${error.message}`);
    });
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  self = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin: `http://${self}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
