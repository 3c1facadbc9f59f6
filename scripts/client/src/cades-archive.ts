/**
 * CAdES B-LTA for a detached signature: the archive time-stamp v3 of ETSI EN 319 122-1 (5.5.3), added by
 * the client, which has the signed content (the service never sees it). Its time-stamp covers the content's
 * hash and the signature with everything that validates it (certificates, CRLs, OCSP responses, the
 * signature time-stamp), so those gain a proof of existence of their own: a validator years later, when
 * the OCSP responder's certificate has expired, still accepts them.
 *
 * The message imprint is the hash of, concatenated: the eContentType (DER), the hash of the content, the
 * SignerInfo's version, sid, digestAlgorithm, signedAttrs, signatureAlgorithm and signature (each DER as
 * it is in the SignerInfo), and the ats-hash-index-v3 (DER). The ats-hash-index-v3 (an unsigned attribute
 * of the archive time-stamp token's own SignerInfo) lists the hash of each certificate and each
 * RevocationInfoChoice of the SignedData, and of each unsigned attribute value of the SignerInfo (its
 * attrType's DER followed by the value's DER). SHA-256 throughout.
 *
 * The CMS is edited as DER (the existing elements keep their exact bytes, so no signature over them can
 * break); the new structures are @peculiar ASN.1 schema classes.
 */
import { createHash } from 'node:crypto';
import { Attribute } from '@peculiar/asn1-cms';
import { AsnConvert, AsnProp, AsnType, AsnTypeTypes, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { requestTimeStamp } from './pdf-long-term';

/** id-aa-ets-archiveTimestampV3 (ETSI EN 319 122-1, 5.5.3). */
export const ID_AA_ETS_ARCHIVE_TIMESTAMP_V3 = '0.4.0.1733.2.4';
/** id-aa-ATSHashIndex-v3 (ETSI EN 319 122-1, 5.5.2). */
export const ID_AA_ATS_HASH_INDEX_V3 = '0.4.0.19122.1.5';
const SHA256 = '2.16.840.1.101.3.4.2.1';

/**
 *   ATSHashIndexV3 ::= SEQUENCE { hashIndAlgorithm AlgorithmIdentifier DEFAULT {algorithm id-sha256},
 *     certificatesHashIndex SEQUENCE OF OCTET STRING, crlsHashIndex SEQUENCE OF OCTET STRING,
 *     unsignedAttrValuesHashIndex SEQUENCE OF OCTET STRING }
 * The algorithm is written out (as EU DSS writes and expects it for v3), not left to the default.
 */
@AsnType({ type: AsnTypeTypes.Sequence })
export class AtsHashIndexV3 {
  @AsnProp({ type: AlgorithmIdentifier })
  public hashIndAlgorithm = new AlgorithmIdentifier({ algorithm: SHA256 });

  @AsnProp({ type: OctetString, repeated: 'sequence' })
  public certificatesHashIndex: OctetString[] = [];

  @AsnProp({ type: OctetString, repeated: 'sequence' })
  public crlsHashIndex: OctetString[] = [];

  @AsnProp({ type: OctetString, repeated: 'sequence' })
  public unsignedAttrValuesHashIndex: OctetString[] = [];

  public constructor(params: Partial<AtsHashIndexV3> = {}) {
    Object.assign(this, params);
  }
}

const sha256 = (...parts: Buffer[]): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

/**
 * Adds an archive time-stamp v3 from the TSA at `tsaUrl` to a detached CAdES signature (B-LT: its
 * validation data in the SignedData) over `content`; the result is B-LTA.
 */
export async function addArchiveTimeStamp(cms: Buffer, content: Buffer, tsaUrl: string): Promise<Buffer> {
  const { imprint, hashIndex } = archiveTimeStampInput(cms, content);
  const token = await requestTimeStamp(tsaUrl, imprint);
  return withArchiveTimeStamp(cms, withHashIndex(token, hashIndex));
}

/** What the archive time-stamp covers: its message imprint (SHA-256) and the ats-hash-index-v3 (DER). */
export function archiveTimeStampInput(cms: Buffer, content: Buffer): { imprint: Buffer; hashIndex: Buffer } {
  const parts = signedDataParts(cms);
  const signer = signerInfoParts(parts.signerInfo);
  const unsignedValues = signer.unsignedAttributes.flatMap((attribute) => {
    const [type, values] = children(attribute);
    return children(values).map((value) => sha256(type, value));
  });
  const hashIndex = Buffer.from(
    AsnConvert.serialize(
      new AtsHashIndexV3({
        certificatesHashIndex: parts.certificates.map((c) => new OctetString(sha256(c))),
        crlsHashIndex: parts.crls.map((c) => new OctetString(sha256(c))),
        unsignedAttrValuesHashIndex: unsignedValues.map((h) => new OctetString(h)),
      }),
    ),
  );
  const imprint = sha256(parts.eContentType, sha256(content), ...signer.signedFields, hashIndex);
  return { imprint, hashIndex };
}

/** The time-stamp token with the ats-hash-index-v3 as an unsigned attribute of its SignerInfo. */
function withHashIndex(token: Buffer, hashIndex: Buffer): Buffer {
  const attribute = Buffer.from(
    AsnConvert.serialize(
      new Attribute({ attrType: ID_AA_ATS_HASH_INDEX_V3, attrValues: [toArrayBuffer(hashIndex)] }),
    ),
  );
  return replaceSignerInfo(token, (signerInfo) => appendUnsignedAttribute(signerInfo, attribute));
}

/** The CMS with the archive time-stamp token as an unsigned attribute of its SignerInfo. */
function withArchiveTimeStamp(cms: Buffer, token: Buffer): Buffer {
  const attribute = Buffer.from(
    AsnConvert.serialize(
      new Attribute({ attrType: ID_AA_ETS_ARCHIVE_TIMESTAMP_V3, attrValues: [toArrayBuffer(token)] }),
    ),
  );
  return replaceSignerInfo(cms, (signerInfo) => appendUnsignedAttribute(signerInfo, attribute));
}

// --- DER, read and rebuilt element by element -----------------------------------------------------

interface SignedDataParts {
  readonly eContentType: Buffer;
  readonly certificates: Buffer[];
  readonly crls: Buffer[];
  readonly signerInfo: Buffer;
}

function signedDataParts(cms: Buffer): SignedDataParts {
  const fields = children(signedDataOf(cms));
  const [encapContentInfo] = fields.slice(2);
  const certificates = fields.find((f) => f[0] === 0xa0);
  const crls = fields.find((f) => f[0] === 0xa1);
  const signerInfos = children(fields[fields.length - 1]);
  if (signerInfos.length !== 1) throw new Error('the CMS must hold exactly one SignerInfo');
  return {
    eContentType: children(encapContentInfo)[0],
    certificates: certificates ? children(certificates) : [],
    crls: crls ? children(crls) : [],
    signerInfo: signerInfos[0],
  };
}

/** version, sid, digestAlgorithm, signedAttrs, signatureAlgorithm, signature; and the unsigned attributes. */
function signerInfoParts(signerInfo: Buffer): { signedFields: Buffer[]; unsignedAttributes: Buffer[] } {
  const fields = children(signerInfo);
  const unsigned = fields.find((f) => f[0] === 0xa1);
  const signedFields = fields.filter((f) => f[0] !== 0xa1);
  if (signedFields.length !== 6 || signedFields[3][0] !== 0xa0) {
    throw new Error('the SignerInfo has no signed attributes');
  }
  return { signedFields, unsignedAttributes: unsigned ? children(unsigned) : [] };
}

function appendUnsignedAttribute(signerInfo: Buffer, attribute: Buffer): Buffer {
  const fields = children(signerInfo);
  const unsigned = fields.find((f) => f[0] === 0xa1);
  const attributes = [...(unsigned ? children(unsigned) : []), attribute];
  const rest = fields.filter((f) => f[0] !== 0xa1);
  return element(0x30, Buffer.concat([...rest, element(0xa1, Buffer.concat(attributes))]));
}

/** ContentInfo { contentType, [0] EXPLICIT SignedData }: the SignedData. */
function signedDataOf(contentInfo: Buffer): Buffer {
  const [, explicit] = children(contentInfo);
  return children(explicit)[0];
}

/** The ContentInfo with its only SignerInfo replaced (every other element keeps its bytes). */
function replaceSignerInfo(contentInfo: Buffer, replace: (signerInfo: Buffer) => Buffer): Buffer {
  const [contentType] = children(contentInfo);
  const fields = children(signedDataOf(contentInfo));
  const signerInfos = children(fields[fields.length - 1]);
  if (signerInfos.length !== 1) throw new Error('the CMS must hold exactly one SignerInfo');
  const signedData = element(
    0x30,
    Buffer.concat([...fields.slice(0, -1), element(0x31, replace(signerInfos[0]))]),
  );
  return element(0x30, Buffer.concat([contentType, element(0xa0, signedData)]));
}

function lengthOf(der: Buffer, at: number): { header: number; length: number } {
  const first = der[at + 1];
  if (first === undefined) throw new Error('truncated DER');
  if (first < 0x80) return { header: 2, length: first };
  const octets = first & 0x7f;
  if (octets === 0 || octets > 4) throw new Error('not DER (indefinite or oversized length)');
  let length = 0;
  for (let i = 0; i < octets; i++) length = length * 256 + der[at + 2 + i];
  return { header: 2 + octets, length };
}

/** The elements inside one constructed DER element. */
function children(der: Buffer): Buffer[] {
  const outer = lengthOf(der, 0);
  const end = outer.header + outer.length;
  if (end > der.length) throw new Error('truncated DER');
  const out: Buffer[] = [];
  for (let at = outer.header; at < end;) {
    const inner = lengthOf(der, at);
    const next = at + inner.header + inner.length;
    if (next > end) throw new Error('truncated DER');
    out.push(der.subarray(at, next));
    at = next;
  }
  return out;
}

function element(tag: number, content: Buffer): Buffer {
  const octets: number[] = [];
  for (let n = content.length; n > 0; n = Math.floor(n / 256)) octets.unshift(n % 256);
  const header = content.length < 0x80 ? [content.length] : [0x80 | octets.length, ...octets];
  return Buffer.concat([Buffer.from([tag, ...header]), content]);
}

function toArrayBuffer(buffer: Buffer): ArrayBuffer {
  return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;
}
