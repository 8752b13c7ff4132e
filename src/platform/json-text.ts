import { Readable } from 'node:stream';

/**
 * A response body already serialised as JSON (spliced from PostgreSQL text, or cached). REST
 * sends it as is; surfaces that need the value (MCP structured content) parse it. A body in
 * parts lets a large cached part (bytes) go out on every request without being copied or encoded.
 */
export class JsonText {
  readonly parts: (string | Buffer)[];
  constructor(...parts: (string | Buffer)[]) {
    this.parts = parts;
  }
  /** What to hand the HTTP reply: a string, or the parts as a stream (with their total length). */
  body(): { body: string | Readable; length: number } {
    if (this.parts.length === 1 && typeof this.parts[0] === 'string') {
      return { body: this.parts[0], length: Buffer.byteLength(this.parts[0]) };
    }
    const buffers = this.parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part));
    return { body: Readable.from(buffers, { objectMode: false }), length: buffers.reduce((n, b) => n + b.length, 0) };
  }
  get text(): string {
    return this.parts.map((part) => (typeof part === 'string' ? part : part.toString('utf8'))).join('');
  }
  value(): unknown {
    return JSON.parse(this.text);
  }
}
