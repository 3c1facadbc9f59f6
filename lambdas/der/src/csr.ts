import { constants, createPublicKey, verify } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { Attributes, CertificationRequest, CertificationRequestInfo } from '@peculiar/asn1-csr';
import { KEY_TYPE_SPECS, nodeHashName } from '@pipeline/core/shared';
import { subjectAttributes } from '@pipeline/core/identity';
import { canonicalLayoutKeyType } from '@pipeline/core/pki';
import {
  algorithmIdentifier,
  algorithmIdentifierDer,
  parsedKeyType,
  schemeFor,
  schemeForOid,
  signDer,
} from './algorithms';
import { derChildren, derContent, outerLength, signedDer } from './der';
import { BadCsrError, CsrSignatureInvalidError } from './errors';
import { encodeName, nameDerOf } from './name';
import { csrInfoDer, csrTemplate, csrTemplateOf } from './csr-template';
import { readCsrFast } from './csr-reader';
import type { BuildCsrInput, VerifiedCsr } from './types';

/** Largest CSR accepted: an RSA-4096 CSR with a full subject is about 1.2 kB. */
const MAX_CSR_BYTES = 8192;

/**
 * Builds a PKCS#10 CSR (DER) for a key that never leaves the HSM: the CertificationRequestInfo is hashed
 * here and only the digest goes to `sign`. The subject is validated against the profile first. The
 * CertificationRequestInfo comes from the key type's template (csrInfoDer): the subject Name and the
 * SubjectPublicKeyInfo spliced into the fixed DER; a key in its canonical layout as it is, any other
 * encoding as the schema re-encodes it. The result is byte for byte buildCsrBySchema's.
 */
export async function buildCsr(input: BuildCsrInput): Promise<Buffer> {
  const canonical = canonicalLayoutKeyType(input.publicKeySpki);
  if ((canonical ?? parsedKeyType(input.publicKeySpki)) !== input.keyType) {
    throw new BadCsrError(`the public key is not a ${input.keyType} key`);
  }
  const template = csrTemplate(input.keyType);
  const subjectDer = nameDerOf(subjectAttributes(input.subject));
  const spki = canonical
    ? input.publicKeySpki
    : Buffer.from(AsnConvert.serialize(AsnConvert.parse(input.publicKeySpki, SubjectPublicKeyInfo)));
  const infoDer = csrInfoDer(subjectDer, spki);
  const signature = await signDer(infoDer, template.scheme, input.sign);
  return signedDer(infoDer, template.algorithm, signature);
}

/**
 * buildCsr by the full schema encoding of the CertificationRequestInfo and node:crypto's key type, as it
 * was before the template: the template's reference in tests and benchmarks.
 */
export async function buildCsrBySchema(input: BuildCsrInput): Promise<Buffer> {
  if (parsedKeyType(input.publicKeySpki) !== input.keyType) {
    throw new BadCsrError(`the public key is not a ${input.keyType} key`);
  }
  const scheme = schemeFor(input.keyType);
  const info = new CertificationRequestInfo({
    version: 0,
    subject: encodeName(subjectAttributes(input.subject)),
    subjectPKInfo: AsnConvert.parse(input.publicKeySpki, SubjectPublicKeyInfo),
    attributes: new Attributes(),
  });
  const infoDer = Buffer.from(AsnConvert.serialize(info));
  const signature = await signDer(infoDer, scheme, input.sign);
  return signedDer(infoDer, algorithmIdentifierDer(algorithmIdentifier(scheme)), signature);
}

/**
 * The signer's proof-of-possession check of a CSR it has just built (buildCsr) from `publicKeySpki`, the
 * pool record's public key: the HSM's signature over the CertificationRequestInfo verifies with that key.
 * It proves what verifyCsr would (the private key that signed is the record's public key) with one
 * verify and no parse: the DER is the signer's own, only split into its three parts. Throws
 * CsrSignatureInvalidError when it does not verify.
 */
export function verifyOwnCsr(csrDer: Buffer, publicKeySpki: Buffer): void {
  let ok = false;
  try {
    const [info, algorithm, bits, ...rest] = derChildren(csrDer);
    const template = csrTemplateOf(algorithm);
    const content = bits?.[0] === 0x03 ? derContent(bits) : undefined;
    const whole = outerLength(csrDer) === csrDer.length;
    if (template && whole && rest.length === 0 && content?.[0] === 0) {
      const key = { key: publicKeySpki, format: 'der', type: 'spki' } as const;
      ok = verify(
        nodeHashName(template.scheme.digestAlgorithm),
        info,
        template.scheme.signatureAlgorithm === 'ECDSA'
          ? { ...key, dsaEncoding: 'der' }
          : { ...key, padding: constants.RSA_PKCS1_PADDING },
        content.subarray(1),
      );
    }
  } catch {
    // not the shape buildCsr writes, or not a key: no proof
  }
  if (!ok) throw new CsrSignatureInvalidError();
}

function parse(der: Buffer): CertificationRequest {
  if (der.length > MAX_CSR_BYTES || outerLength(der) !== der.length) {
    throw new BadCsrError('the CSR is not a single DER element of acceptable size');
  }
  try {
    const csr = AsnConvert.parse(der, CertificationRequest);
    if (csr.certificationRequestInfo.version !== 0) throw new Error('version');
    return csr;
  } catch {
    throw new BadCsrError('the CSR is not a DER PKCS#10 certification request');
  }
}

/**
 * Parses a CSR and verifies its signature with its own public key: proof that the requester holds the
 * private key. Only the key is certified; the CA takes the subject from the verified identity assertion
 * and only compares the CSR's with it. Throws BadCsrError or CsrSignatureInvalidError.
 */
export function verifyCsr(der: Buffer): VerifiedCsr {
  if (der.length <= MAX_CSR_BYTES && outerLength(der) === der.length) {
    const fast = readCsrFast(der);
    if (fast) return fast;
  }
  return verifyCsrByParse(der);
}

/**
 * verifyCsr by the full schema parse and node:crypto's key type, whatever the CSR's shape: the path of
 * every CSR readCsrFast does not take, and its reference in tests and benchmarks.
 */
export function verifyCsrByParse(der: Buffer): VerifiedCsr {
  const csr = parse(der);
  const info = csr.certificationRequestInfo;
  const publicKeySpki = Buffer.from(AsnConvert.serialize(info.subjectPKInfo));
  const keyType = parsedKeyType(publicKeySpki);
  if (!keyType) throw new BadCsrError('the CSR public key is not a supported key type');
  const scheme = schemeForOid(csr.signatureAlgorithm.algorithm);
  const family = KEY_TYPE_SPECS[keyType].family;
  if (!scheme || (scheme.signatureAlgorithm === 'ECDSA') !== (family === 'EC')) {
    throw new BadCsrError('the CSR signature algorithm is not supported for its key');
  }
  // Parameters must be exactly NULL (RSA) or absent (ECDSA): anything else is a malformed identifier.
  const expected = algorithmIdentifierDer(algorithmIdentifier(scheme));
  const parametersOk =
    algorithmIdentifierDer(csr.signatureAlgorithm).equals(expected) ||
    (family === 'RSA' && csr.signatureAlgorithm.parameters === undefined);
  if (!parametersOk) throw new BadCsrError('the CSR signature algorithm parameters are malformed');

  const signed = Buffer.from(csr.certificationRequestInfoRaw ?? AsnConvert.serialize(info));
  const key = createPublicKey({ key: publicKeySpki, format: 'der', type: 'spki' });
  let ok = false;
  try {
    ok = verify(
      nodeHashName(scheme.digestAlgorithm),
      signed,
      family === 'RSA' ? { key, padding: constants.RSA_PKCS1_PADDING } : { key, dsaEncoding: 'der' },
      Buffer.from(csr.signature),
    );
  } catch {
    // a signature that is not even well-formed (e.g. bad ECDSA DER) is just as invalid
  }
  if (!ok) throw new CsrSignatureInvalidError();
  return { keyType, publicKeySpki, subjectDer: Buffer.from(AsnConvert.serialize(info.subject)) };
}
