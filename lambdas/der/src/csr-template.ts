import { AsnConvert } from '@peculiar/asn1-schema';
import { Name, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { Attributes, CertificationRequestInfo } from '@peculiar/asn1-csr';
import { KEY_TYPES, type KeyType } from '@pipeline/core/shared';
import { algorithmIdentifier, algorithmIdentifierDer, schemeFor } from './algorithms';
import { derChildren, derElement } from './der';
import type { SignatureScheme } from './types';

/** An EC P-256 SubjectPublicKeyInfo (only its place in the structure matters). */
const SAMPLE_SPKI = Buffer.from(
  '3059301306072a8648ce3d020106082a8648ce3d03010703420004' + '11'.repeat(64),
  'hex',
);

/**
 * The fixed parts of every CertificationRequestInfo the signer builds, encoded once with the schemas:
 * version 0 and the empty attributes [0] (the parts of a sample: version, subject, SPKI, attributes).
 */
const [VERSION, , , NO_ATTRIBUTES] = derChildren(
  Buffer.from(
    AsnConvert.serialize(
      new CertificationRequestInfo({
        version: 0,
        subject: new Name([]),
        subjectPKInfo: AsnConvert.parse(SAMPLE_SPKI, SubjectPublicKeyInfo),
        attributes: new Attributes(),
      }),
    ),
  ),
);

/** What a key type's CSRs share: the signature scheme and its AlgorithmIdentifier DER. */
export interface CsrTemplate {
  readonly scheme: SignatureScheme;
  readonly algorithm: Buffer;
}

const TEMPLATES = new Map<KeyType, CsrTemplate>(
  KEY_TYPES.map((keyType) => {
    const scheme = schemeFor(keyType);
    return [keyType, { scheme, algorithm: algorithmIdentifierDer(algorithmIdentifier(scheme)) }];
  }),
);

export function csrTemplate(keyType: KeyType): CsrTemplate {
  return TEMPLATES.get(keyType)!;
}

/** The template whose AlgorithmIdentifier is exactly these octets, if any. */
export function csrTemplateOf(algorithm: Buffer | undefined): CsrTemplate | undefined {
  if (!algorithm) return undefined;
  for (const template of TEMPLATES.values()) if (template.algorithm.equals(algorithm)) return template;
  return undefined;
}

/**
 * The CertificationRequestInfo from the template: the subject Name's DER and the SubjectPublicKeyInfo
 * (both as the schemas encode them) spliced between the fixed parts, the length recomputed. Byte for byte
 * what the schema encodes (tests: csr-template.property.test.ts).
 */
export function csrInfoDer(subjectDer: Buffer, spki: Buffer): Buffer {
  return derElement(0x30, Buffer.concat([VERSION, subjectDer, spki, NO_ATTRIBUTES]));
}
