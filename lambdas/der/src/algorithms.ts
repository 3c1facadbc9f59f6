import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import * as rsa from '@peculiar/asn1-rsa';
import * as ecc from '@peculiar/asn1-ecc';
import { KEY_TYPE_SPECS, nodeHashName, type DigestAlgorithm, type KeyType } from '@pipeline/core/shared';
import { canonicalLayoutKeyType } from '@pipeline/core/pki';
import type { SignDigest, SignatureScheme } from './types';

/**
 * Signature schemes by OID. Signing uses one fixed scheme per key type (schemeFor); verification accepts
 * the SHA-2 variants a standard toolkit may produce for a CSR.
 */
export const SCHEMES: readonly SignatureScheme[] = [
  {
    oid: rsa.id_sha256WithRSAEncryption,
    digestAlgorithm: 'SHA-256',
    signatureAlgorithm: 'RSASSA-PKCS1-v1_5',
  },
  {
    oid: rsa.id_sha384WithRSAEncryption,
    digestAlgorithm: 'SHA-384',
    signatureAlgorithm: 'RSASSA-PKCS1-v1_5',
  },
  {
    oid: rsa.id_sha512WithRSAEncryption,
    digestAlgorithm: 'SHA-512',
    signatureAlgorithm: 'RSASSA-PKCS1-v1_5',
  },
  { oid: ecc.id_ecdsaWithSHA256, digestAlgorithm: 'SHA-256', signatureAlgorithm: 'ECDSA' },
  { oid: ecc.id_ecdsaWithSHA384, digestAlgorithm: 'SHA-384', signatureAlgorithm: 'ECDSA' },
  { oid: ecc.id_ecdsaWithSHA512, digestAlgorithm: 'SHA-512', signatureAlgorithm: 'ECDSA' },
];

/**
 * The scheme a key of this type signs CSRs and certificates with: RSA PKCS#1 v1.5 with SHA-256, ECDSA
 * with the hash that matches the curve's strength (P-256: SHA-256, P-384: SHA-384).
 */
export function schemeFor(keyType: KeyType): SignatureScheme {
  const oid =
    keyType === 'EC-P256'
      ? ecc.id_ecdsaWithSHA256
      : keyType === 'EC-P384'
        ? ecc.id_ecdsaWithSHA384
        : rsa.id_sha256WithRSAEncryption;
  return SCHEMES.find((s) => s.oid === oid)!;
}

export function schemeForOid(oid: string): SignatureScheme | undefined {
  return SCHEMES.find((s) => s.oid === oid);
}

/** RSA signature AlgorithmIdentifiers carry NULL parameters; ECDSA ones none (RFC 4055, RFC 5758). */
export function algorithmIdentifier(scheme: SignatureScheme): AlgorithmIdentifier {
  return new AlgorithmIdentifier({
    algorithm: scheme.oid,
    ...(scheme.signatureAlgorithm === 'ECDSA' ? {} : { parameters: null }),
  });
}

/** Serialized AlgorithmIdentifier, for comparing a parsed one with the expected encoding. */
export function algorithmIdentifierDer(id: AlgorithmIdentifier): Buffer {
  return Buffer.from(AsnConvert.serialize(id));
}

export function digest(algorithm: DigestAlgorithm, data: Buffer): Buffer {
  return createHash(nodeHashName(algorithm)).update(data).digest();
}

/** Signs a to-be-signed structure (TBSCertificate, CertificationRequestInfo): its digest, by `sign`. */
export function signDer(der: Buffer, scheme: SignatureScheme, sign: SignDigest): Promise<Buffer> {
  return sign(digest(scheme.digestAlgorithm, der), {
    digestAlgorithm: scheme.digestAlgorithm,
    signatureAlgorithm: scheme.signatureAlgorithm,
  });
}

/**
 * Key type of a SubjectPublicKeyInfo, or undefined when the service does not offer that key. A key in
 * its canonical layout (canonicalLayoutKeyType) is known by its bytes; any other goes to node:crypto.
 */
export function keyTypeOfSpki(spki: Buffer): KeyType | undefined {
  return canonicalLayoutKeyType(spki) ?? parsedKeyType(spki);
}

/** keyTypeOfSpki by node:crypto's parse, whatever the encoding. */
export function parsedKeyType(spki: Buffer): KeyType | undefined {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  } catch {
    return undefined;
  }
  const details = key.asymmetricKeyDetails ?? {};
  const match = (Object.keys(KEY_TYPE_SPECS) as KeyType[]).find((keyType) => {
    const spec = KEY_TYPE_SPECS[keyType];
    if (spec.family === 'RSA') {
      return key.asymmetricKeyType === 'rsa' && details.modulusLength === spec.bits;
    }
    const curve = spec.curve === 'P-256' ? 'prime256v1' : 'secp384r1';
    return key.asymmetricKeyType === 'ec' && details.namedCurve === curve;
  });
  return match;
}
