/**
 * Hardened XML parsing: UTF-8 only, no DOCTYPE (so no entity expansion, internal or external), a size cap,
 * and every parser complaint an error rather than a silently repaired tree. Everything that reads XML from
 * outside (sign requests, SAML messages, documents to sign) goes through here.
 */
import { DOMParser, XMLSerializer } from '@xmldom/xmldom';
import { XmlMalformedError } from './errors';

/** The default cap: a sign request with many tasks stays far below it. */
export const DEFAULT_MAX_XML_BYTES = 4 * 1024 * 1024;

export interface ParseOptions {
  /** Larger input is refused before parsing. */
  readonly maxBytes?: number;
}

const DECLARED_ENCODING = /^\s*<\?xml[^>]*\bencoding\s*=\s*["']([^"']+)["']/;

/** Parses XML text or UTF-8 octets into a DOM document; throws XmlMalformedError on anything doubtful. */
export function parseXml(input: string | Uint8Array, options: ParseOptions = {}): Document {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_XML_BYTES;
  const text = typeof input === 'string' ? input : decodeUtf8(input, maxBytes);
  if (Buffer.byteLength(text, 'utf8') > maxBytes)
    throw new XmlMalformedError(`the XML exceeds ${maxBytes} bytes`);
  const encoding = DECLARED_ENCODING.exec(text)?.[1];
  if (encoding !== undefined && !/^utf-?8$/i.test(encoding)) {
    throw new XmlMalformedError('the XML must be encoded in UTF-8');
  }
  // A DOCTYPE is never needed by the protocols here and is the door to entity expansion.
  if (/<!DOCTYPE/i.test(text)) throw new XmlMalformedError('the XML must not carry a DOCTYPE');
  // The parser's message can quote the input: it goes into the cause, which loggers keep out of replies.
  const fail = (message: string): never => {
    throw new XmlMalformedError('the XML is not well-formed', { cause: new Error(message) });
  };
  let document: Document;
  try {
    document = new DOMParser({
      locator: {},
      // xmldom only warns about mismatched end tags: in strict parsing a warning is an error too.
      errorHandler: { warning: fail, error: fail, fatalError: fail },
    }).parseFromString(text.replace(/^\uFEFF/, ''), 'application/xml') as unknown as Document;
  } catch (err) {
    if (err instanceof XmlMalformedError) throw err;
    throw new XmlMalformedError('the XML is not well-formed', { cause: err });
  }
  if (document?.documentElement == null) throw new XmlMalformedError('the XML has no root element');
  for (let node = document.firstChild; node !== null; node = node.nextSibling) {
    const stray =
      node.nodeType === 3
        ? (node.nodeValue ?? '').trim() !== ''
        : node.nodeType === 1 && node !== document.documentElement;
    if (stray) throw new XmlMalformedError('the XML has content outside its root element');
  }
  return document;
}

/** The XML text of a node, as xmldom writes it (no declaration). */
export function serializeXml(node: Node): string {
  return new XMLSerializer().serializeToString(node as never);
}

function decodeUtf8(octets: Uint8Array, maxBytes: number): string {
  if (octets.byteLength > maxBytes) throw new XmlMalformedError(`the XML exceeds ${maxBytes} bytes`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(octets);
  } catch (err) {
    throw new XmlMalformedError('the XML is not valid UTF-8', { cause: err });
  }
}
