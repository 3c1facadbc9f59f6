import { isUtf8 } from 'node:buffer';
import { constants, verify } from 'node:crypto';
import { KEY_TYPE_SPECS, nodeHashName, type KeyType } from '@pipeline/core/shared';
import { canonicalLayoutKeyType } from '@pipeline/core/pki';
import { SCHEMES, algorithmIdentifier, algorithmIdentifierDer } from './algorithms';
import type { SignatureScheme, VerifiedCsr } from './types';

/**
 * The CA's fast path for the CSRs it meets every time (the signer's): a strict DER walk that recognises
 * one shape and verifies its signature, or gives up (undefined) and leaves the CSR to the full schema
 * parse, which then accepts or refuses with its own error. The shape, every length minimal DER:
 *
 * SEQUENCE { CertificationRequestInfo SEQUENCE { INTEGER 0, Name, SubjectPublicKeyInfo, [0] {} },
 *            AlgorithmIdentifier, BIT STRING 00 || signature }
 *
 * the Name a SEQUENCE of single-valued RDNs { OID, UTF8String (valid UTF-8) or PrintableString, not empty },
 * the key in its canonical layout (canonicalLayoutKeyType), the AlgorithmIdentifier exactly as the service
 * encodes one of the schemes it accepts, of the key's family. For those, the parse would yield the same
 * key, subject (they re-encode to these very octets) and signed octets (tests: csr-reader.property.test.ts).
 */

/** The accepted AlgorithmIdentifiers, by their exact DER (RSA with its NULL parameters). */
const ALGORITHMS: ReadonlyArray<{ der: Buffer; scheme: SignatureScheme }> = SCHEMES.map((scheme) => ({
  der: algorithmIdentifierDer(algorithmIdentifier(scheme)),
  scheme,
}));

const VERSION_0 = Buffer.from([0x02, 0x01, 0x00]);

interface Tlv {
  readonly tag: number;
  /** First content octet. */
  readonly start: number;
  /** One past the last content octet. */
  readonly end: number;
}

/** The element at `at`, ending by `limit`: one tag octet, a minimal definite length. */
function tlv(der: Buffer, at: number, limit: number, tag: number): Tlv | undefined {
  if (at + 2 > limit || der[at] !== tag) return undefined;
  const first = der[at + 1];
  let length = first;
  let start = at + 2;
  if (first >= 0x80) {
    const octets = first & 0x7f;
    if (octets === 0 || octets > 2 || start + octets > limit || der[start] === 0) return undefined;
    length = octets === 1 ? der[start] : der[start] * 256 + der[start + 1];
    if (length < 0x80) return undefined;
    start += octets;
  }
  const end = start + length;
  return end <= limit ? { tag, start, end } : undefined;
}

/** An OID's content: subidentifiers of at most 4 octets, none with a leading 0x80. */
function isOid(der: Buffer, start: number, end: number): boolean {
  if (start === end || der[end - 1] & 0x80) return false;
  let octets = 0;
  for (let i = start; i < end; i++) {
    if (octets === 0 && der[i] === 0x80) return false;
    octets = der[i] & 0x80 ? octets + 1 : 0;
    if (octets >= 4) return false;
  }
  return true;
}

/** A Name of single-valued RDNs, each { OID, UTF8String or PrintableString }. */
function isPlainName(der: Buffer, name: Tlv): boolean {
  for (let at = name.start; at < name.end;) {
    const rdn = tlv(der, at, name.end, 0x31);
    const atv = rdn && tlv(der, rdn.start, rdn.end, 0x30);
    if (!rdn || !atv || atv.end !== rdn.end) return false;
    const oid = tlv(der, atv.start, atv.end, 0x06);
    if (!oid || !isOid(der, oid.start, oid.end)) return false;
    const value = tlv(der, oid.end, atv.end, 0x0c) ?? tlv(der, oid.end, atv.end, 0x13);
    if (!value || value.end !== atv.end || value.start === value.end) return false;
    if (value.tag === 0x0c && !isUtf8(der.subarray(value.start, value.end))) return false;
    at = rdn.end;
  }
  return true;
}

const family = (keyType: KeyType): string => KEY_TYPE_SPECS[keyType].family;

/**
 * verifyCsr's result for a CSR of the recognised shape whose signature verifies with its key; undefined
 * for anything else (the full parse decides). `der` is already a single element of acceptable size.
 */
export function readCsrFast(der: Buffer): VerifiedCsr | undefined {
  const outer = tlv(der, 0, der.length, 0x30);
  if (!outer || outer.end !== der.length) return undefined;
  const info = tlv(der, outer.start, outer.end, 0x30);
  const algorithm = info && tlv(der, info.end, outer.end, 0x30);
  const bits = algorithm && tlv(der, algorithm.end, outer.end, 0x03);
  if (!info || !algorithm || !bits || bits.end !== outer.end) return undefined;
  if (bits.end - bits.start < 2 || der[bits.start] !== 0) return undefined;

  if (!der.subarray(info.start, info.start + 3).equals(VERSION_0)) return undefined;
  const name = tlv(der, info.start + 3, info.end, 0x30);
  const spki = name && tlv(der, name.end, info.end, 0x30);
  const attributes = spki && tlv(der, spki.end, info.end, 0xa0);
  if (!name || !spki || !attributes || attributes.end !== info.end || attributes.start !== attributes.end) {
    return undefined;
  }
  if (!isPlainName(der, name)) return undefined;
  const publicKeySpki = der.subarray(name.end, spki.end);
  const keyType = canonicalLayoutKeyType(publicKeySpki);
  const algorithmDer = der.subarray(info.end, algorithm.end);
  const scheme = ALGORITHMS.find((a) => a.der.equals(algorithmDer))?.scheme;
  if (!keyType || !scheme || (scheme.signatureAlgorithm === 'ECDSA') !== (family(keyType) === 'EC')) {
    return undefined;
  }
  const key = { key: publicKeySpki, format: 'der', type: 'spki' } as const;
  let ok = false;
  try {
    ok = verify(
      nodeHashName(scheme.digestAlgorithm),
      der.subarray(outer.start, info.end),
      family(keyType) === 'RSA'
        ? { ...key, padding: constants.RSA_PKCS1_PADDING }
        : { ...key, dsaEncoding: 'der' },
      der.subarray(bits.start + 1, bits.end),
    );
  } catch {
    // a malformed signature: the full parse gives the answer
  }
  if (!ok) return undefined;
  return {
    keyType,
    publicKeySpki: Buffer.from(publicKeySpki),
    subjectDer: Buffer.from(der.subarray(info.start + 3, name.end)),
  };
}
