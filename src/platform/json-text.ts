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
  /**
   * What to hand the HTTP reply. Strings are encoded straight into one buffer (measuring and
   * writing each part once; concatenating them first would copy the whole body once more). A
   * body with a byte part (a large cached one) is streamed, so that part is never copied.
   */
  body(): { body: Buffer | Readable; length: number } {
    if (this.parts.every((part) => typeof part === 'string')) {
      const buffer = Buffer.allocUnsafe(this.parts.reduce((n, part) => n + Buffer.byteLength(part), 0));
      let offset = 0;
      for (const part of this.parts) offset += buffer.write(part as string, offset);
      return { body: buffer, length: buffer.length };
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
