/**
 * The signed attributes of a DSS-Ext sign task of SigType PDF or CMS (ELN-0609 §4.1), as the e-service
 * built them, updated once the certificate exists (following signservice's PDFTBSDataProcessor, with a
 * CAdES rule it lacks): for AdES BES/EPES, signingCertificateV2 names the certificate (any v1 or v2
 * reference the e-service put there is replaced), a CMS (CAdES) signature gets signingTime, a PAdES one
 * loses it (the time is the PDF dictionary's /M). Every other attribute is kept byte for byte, an EPES
 * signaturePolicyIdentifier among them. The result is re-encoded in DER order: exactly what gets signed.
 */
import { Attribute, id_contentType, id_data, id_messageDigest, id_signingTime } from '@peculiar/asn1-cms';
import { AsnConvert, AsnObjectIdentifierConverter, OctetString } from '@peculiar/asn1-schema';
import { Time } from '@peculiar/asn1-x509';
import { DIGEST_LENGTH, type DigestAlgorithm } from '@pipeline/core/shared';
import { derOrdered, signedAttributesDer, signingCertificateV2Attribute } from './cms';
import { derChildren } from './der';
import { id_aa_signingCertificateV2 } from './ess';
import { BadSignTaskError } from './errors';

const id_aa_signingCertificate = '1.2.840.113549.1.9.16.2.12';
const id_aa_signaturePolicyIdentifier = '1.2.840.113549.1.9.16.2.15';

export interface TaskAttributesInput {
  /** The e-service's SignedAttributes: a DER SET OF Attribute. */
  readonly der: Buffer;
  readonly sigType: 'PDF' | 'CMS';
  readonly adesType: 'None' | 'BES' | 'EPES';
  readonly digestAlgorithm: DigestAlgorithm;
  readonly certificateDer: Buffer;
  readonly signingTime: Date;
}

/** The updated SignedAttributes DER; BadSignTaskError when the input breaks a rule of the profile. */
export function updateTaskAttributes(input: TaskAttributesInput): Buffer {
  const attributes = parseAttributes(input.der);
  const byType = new Map<string, Attribute>();
  for (const a of attributes) {
    if (byType.has(a.attrType)) throw new BadSignTaskError('a signed attribute appears twice');
    byType.set(a.attrType, a);
  }
  checkContent(byType, input.digestAlgorithm);
  if (input.adesType === 'None') return input.der;
  if (input.adesType === 'EPES' && !byType.has(id_aa_signaturePolicyIdentifier)) {
    throw new BadSignTaskError('an EPES task needs a signaturePolicyIdentifier');
  }
  const replaced = new Set([id_aa_signingCertificate, id_aa_signingCertificateV2, id_signingTime]);
  const kept = attributes.filter((a) => !replaced.has(a.attrType));
  const added = [signingCertificateV2Attribute(input.certificateDer)];
  if (input.sigType === 'CMS') {
    added.push(
      new Attribute({
        attrType: id_signingTime,
        attrValues: [AsnConvert.serialize(new Time(input.signingTime))],
      }),
    );
  }
  return signedAttributesDer(derOrdered([...kept, ...added]));
}

function parseAttributes(der: Buffer): Attribute[] {
  if (der[0] !== 0x31) throw new BadSignTaskError('ToBeSignedBytes is not a DER SET of attributes');
  try {
    return derChildren(der).map((child) => AsnConvert.parse(child, Attribute));
  } catch (err) {
    throw new BadSignTaskError('ToBeSignedBytes is not a DER SET of attributes', { cause: err });
  }
}

/** contentType id-data and one messageDigest of the signature's digest length (ELN-0609 §4.1.2). */
function checkContent(byType: ReadonlyMap<string, Attribute>, digestAlgorithm: DigestAlgorithm): void {
  const contentType = byType.get(id_contentType)?.attrValues;
  const idData = Buffer.from(AsnObjectIdentifierConverter.toASN(id_data).toBER());
  if (contentType?.length !== 1 || !Buffer.from(contentType[0]!).equals(idData)) {
    throw new BadSignTaskError('the contentType attribute must be id-data');
  }
  const digest = byType.get(id_messageDigest)?.attrValues;
  const value = digest?.length === 1 ? AsnConvert.parse(digest[0]!, OctetString) : undefined;
  if (value?.byteLength !== DIGEST_LENGTH[digestAlgorithm]) {
    throw new BadSignTaskError('the messageDigest attribute does not have the length of the digest');
  }
}
