/**
 * Just enough of multipart/form-data (RFC 7578) for the demo's upload form: named fields, one file,
 * a bounded body. Field values are UTF-8; a file keeps its bytes and its (client-given) name.
 */
import type { IncomingMessage } from 'node:http';

export interface FormPart {
  readonly name: string;
  /** Set for a file input. */
  readonly filename?: string;
  readonly contentType?: string;
  readonly data: Buffer;
}

export class FormError extends Error {
  public override readonly name = 'FormError';
  public constructor(
    public readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) throw new FormError(413, `the upload is larger than ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new FormError(413, `the upload is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function headerParameter(header: string, name: string): string | undefined {
  const match =
    new RegExp(`;\\s*${name}="([^"]*)"`, 'i').exec(header) ??
    new RegExp(`;\\s*${name}=([^;\\s]+)`, 'i').exec(header);
  return match?.[1];
}

/** The parts of a multipart/form-data body. */
export function parseMultipart(contentType: string | undefined, body: Buffer): FormPart[] {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) {
    throw new FormError(415, 'expected a form upload (multipart/form-data)');
  }
  const boundary = headerParameter(contentType, 'boundary');
  if (!boundary || boundary.length > 200) throw new FormError(400, 'the upload has no boundary');
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: FormPart[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) throw new FormError(400, 'the upload is not multipart');
  for (;;) {
    at += delimiter.length;
    if (body.subarray(at, at + 2).toString() === '--') return parts;
    if (body.subarray(at, at + 2).toString() !== '\r\n') throw new FormError(400, 'malformed upload');
    at += 2;
    const headersEnd = body.indexOf('\r\n\r\n', at);
    if (headersEnd < 0) throw new FormError(400, 'malformed upload');
    const headers = body.subarray(at, headersEnd).toString('utf8').split('\r\n');
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headersEnd + 4);
    if (next < 0) throw new FormError(400, 'malformed upload');
    const disposition = headers.find((h) => /^content-disposition:/i.test(h)) ?? '';
    const type = headers.find((h) => /^content-type:/i.test(h));
    const name = headerParameter(disposition, 'name');
    if (name === undefined) throw new FormError(400, 'an upload part has no name');
    const filename = headerParameter(disposition, 'filename');
    parts.push({
      name,
      ...(filename === undefined ? {} : { filename }),
      ...(type === undefined ? {} : { contentType: type.slice(type.indexOf(':') + 1).trim() }),
      data: body.subarray(headersEnd + 4, next),
    });
    at = next + 2;
  }
}
