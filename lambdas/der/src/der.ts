/**
 * Length of the outermost DER element (tag + length + content), or undefined when the header is not a
 * definite-length DER header. Used to refuse inputs with trailing bytes, which the ASN.1 parser ignores.
 */
export function outerLength(der: Buffer): number | undefined {
  if (der.length < 2) return undefined;
  const first = der[1];
  if (first < 0x80) return 2 + first;
  const octets = first & 0x7f;
  if (octets === 0 || octets > 4 || der.length < 2 + octets) return undefined;
  let length = 0;
  for (let i = 0; i < octets; i++) length = length * 256 + der[2 + i];
  return 2 + octets + length;
}

export function toArrayBuffer(buffer: Buffer): ArrayBuffer {
  return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;
}

export function pem(label: 'CERTIFICATE' | 'CERTIFICATE REQUEST', der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/** DER of the first PEM block with that label. */
export function pemToDer(text: string, label: 'CERTIFICATE' | 'CERTIFICATE REQUEST' = 'CERTIFICATE'): Buffer {
  const match = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]+)-----END ${label}-----`).exec(text);
  if (!match) throw new Error(`no ${label} PEM block`);
  return Buffer.from(match[1].replace(/\s+/g, ''), 'base64');
}

/** The elements (tag, length, content) inside a constructed DER element. */
export function derChildren(der: Buffer): Buffer[] {
  const header = headerLength(der);
  const end = outerLength(der);
  if (header === undefined || end === undefined || end > der.length) throw new Error('not a DER element');
  const children: Buffer[] = [];
  for (let at = header; at < end;) {
    const length = outerLength(der.subarray(at));
    if (length === undefined || at + length > end) throw new Error('not a DER element');
    children.push(der.subarray(at, at + length));
    at += length;
  }
  return children;
}

/** The content octets of a DER element (after its tag and length). */
export function derContent(der: Buffer): Buffer {
  const header = headerLength(der);
  const end = outerLength(der);
  if (header === undefined || end === undefined || end > der.length) throw new Error('not a DER element');
  return der.subarray(header, end);
}

/** A DER element of one tag octet around `content`. */
export function derElement(tag: number, content: Buffer): Buffer {
  const length = content.length;
  const octets: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) octets.unshift(n % 256);
  const header = length < 0x80 ? [length] : [0x80 | octets.length, ...octets];
  return Buffer.concat([Buffer.from([tag, ...header]), content]);
}

/**
 * The SIGNED{} shape of X.509 certificates and PKCS#10 requests: SEQUENCE { the signed DER as it was
 * signed, the signature algorithm, BIT STRING signature }. Wrapping the bytes already encoded (instead of
 * serializing the whole structure again) halves the ASN.1 work of each certificate and CSR.
 */
export function signedDer(tbsDer: Buffer, algorithmDer: Buffer, signature: Buffer): Buffer {
  const bits = derElement(0x03, Buffer.concat([Buffer.from([0]), signature]));
  return derElement(0x30, Buffer.concat([tbsDer, algorithmDer, bits]));
}

function headerLength(der: Buffer): number | undefined {
  if (der.length < 2) return undefined;
  return der[1] < 0x80 ? 2 : 2 + (der[1] & 0x7f);
}
