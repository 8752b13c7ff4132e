import http from 'node:http';

// A plain HTTP client (node:http) for tests that talk to a listening server with exactly the
// headers they give. Node's global fetch adds headers of its own (it always sends
// `Sec-Fetch-Mode: cors`), which matters to an API that refuses browser requests.

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: any;
}

export function httpRequest(
  url: string | URL,
  options: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
      });
    });
    request.on('error', reject);
    if (options.timeoutMs)
      request.setTimeout(options.timeoutMs, () => request.destroy(new Error(`timed out after ${options.timeoutMs} ms`)));
    request.end(options.body);
  });
}
