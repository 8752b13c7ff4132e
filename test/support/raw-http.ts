import { once } from 'node:events';
import net from 'node:net';

// One TCP connection spoken to byte by byte: for what an HTTP client library hides (several
// requests on one kept-alive socket, a body that never comes or comes a byte at a time, a socket
// that sends nothing at all) and for what the server does with the socket itself.

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export class RawConnection {
  readonly socket: net.Socket;
  #buffer = Buffer.alloc(0);
  #waiters: (() => void)[] = [];
  /** Resolves when the server has closed the connection (or it failed). */
  readonly closed: Promise<void>;
  #isClosed = false;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#wake();
    });
    this.closed = new Promise((resolve) => {
      const done = () => {
        this.#isClosed = true;
        this.#wake();
        resolve();
      };
      socket.on('end', done);
      socket.on('close', done);
      socket.on('error', done);
    });
  }

  static async open(port: number): Promise<RawConnection> {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    return new RawConnection(socket);
  }

  get isClosed(): boolean {
    return this.#isClosed;
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** The next response on this connection, or an error saying none came within `timeoutMs` (or the socket closed first). */
  async response(timeoutMs = 10_000): Promise<RawResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = this.#parse();
      if (parsed) return parsed;
      if (this.#isClosed) throw new Error('the server closed the connection without an answer');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no answer within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  /** One complete response off the front of the buffer (Content-Length or chunked), or undefined. */
  #parse(): RawResponse | undefined {
    const end = this.#buffer.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const [statusLine, ...lines] = this.#buffer.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const status = Number(statusLine!.split(' ')[1]);
    let rest = this.#buffer.subarray(end + 4);
    let body: Buffer;
    if (headers['transfer-encoding']?.includes('chunked')) {
      const chunks: Buffer[] = [];
      for (;;) {
        const lineEnd = rest.indexOf('\r\n');
        if (lineEnd < 0) return undefined;
        const size = Number.parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
        if (rest.length < lineEnd + 2 + size + 2) return undefined;
        chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
        rest = rest.subarray(lineEnd + 2 + size + 2);
        if (size === 0) break;
      }
      body = Buffer.concat(chunks);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (rest.length < length) return undefined;
      body = rest.subarray(0, length);
      rest = rest.subarray(length);
    }
    this.#buffer = rest;
    return { status, headers, body: body.toString('utf8') };
  }
}
