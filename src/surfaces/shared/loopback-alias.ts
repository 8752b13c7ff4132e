import { isIPv4 } from 'node:net';

// A server on loopback answers to several names (localhost, 127.0.0.1, [::1]), but OAuth and MCP
// bind everything to one: the issuer, the endpoints, the protected resource and the audience of
// its tokens are all BASE_URL's. A client that reached it by another loopback name is stuck with
// errors that name no way out (an issuer mismatch, a resource mismatch); it is told instead.

function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  // RFC 6761 §6.3: localhost and every name under it are loopback.
  return name === 'localhost' || name.endsWith('.localhost') || name === '[::1]' || (isIPv4(name) && name.startsWith('127.'));
}

/**
 * The refusal for a request whose Host is another loopback name of a loopback BASE_URL, on the
 * same port: "use BASE_URL". Undefined for every other request, so a proxy in front (another
 * port, or any public BASE_URL) and the Host it sends never matter.
 */
export function loopbackAliasRefusal(baseUrl: string, hostHeader: string | undefined, what: string): string | undefined {
  const own = new URL(baseUrl);
  if (!hostHeader || !isLoopbackName(own.hostname)) return undefined;
  let reached: URL;
  try {
    reached = new URL(`${own.protocol}//${hostHeader}`);
  } catch {
    return undefined;
  }
  if (!isLoopbackName(reached.hostname) || reached.hostname === own.hostname || reached.port !== own.port) return undefined;
  return `This server's address is ${own.origin} (its BASE_URL), not ${reached.origin}: ${what} are bound to it. Use ${own.origin} instead, or set BASE_URL to the address you use.`;
}
