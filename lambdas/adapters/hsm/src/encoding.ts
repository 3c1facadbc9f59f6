import { createPublicKey } from 'node:crypto';
import * as pkcs11js from 'pkcs11js';
import { KEY_TYPE_SPECS, type DigestAlgorithm, type KeyType } from '@pipeline/core/shared';

/**
 * DER prefixes of the PKCS#1 v1.5 DigestInfo (RFC 8017, 9.2 note 1): the HSM's CKM_RSA_PKCS signs
 * DigestInfo = prefix || digest, so a pre-computed digest can be signed without re-hashing.
 */
const DIGEST_INFO_PREFIX: Readonly<Record<DigestAlgorithm, Buffer>> = {
  'SHA-256': Buffer.from('3031300d060960864801650304020105000420', 'hex'),
  'SHA-384': Buffer.from('3041300d060960864801650304020205000430', 'hex'),
  'SHA-512': Buffer.from('3051300d060960864801650304020305000440', 'hex'),
};

export function digestInfo(digestAlgorithm: DigestAlgorithm, digest: Buffer): Buffer {
  return Buffer.concat([DIGEST_INFO_PREFIX[digestAlgorithm], digest]);
}

/** PSS parameters for a digest algorithm: MGF1 with the same hash, salt length = hash length. */
export function pssParams(digestAlgorithm: DigestAlgorithm): pkcs11js.RsaPSS {
  switch (digestAlgorithm) {
    case 'SHA-256':
      return {
        type: pkcs11js.CK_PARAMS_RSA_PSS,
        hashAlg: pkcs11js.CKM_SHA256,
        mgf: pkcs11js.CKG_MGF1_SHA256,
        saltLen: 32,
      };
    case 'SHA-384':
      return {
        type: pkcs11js.CK_PARAMS_RSA_PSS,
        hashAlg: pkcs11js.CKM_SHA384,
        mgf: pkcs11js.CKG_MGF1_SHA384,
        saltLen: 48,
      };
    case 'SHA-512':
      return {
        type: pkcs11js.CK_PARAMS_RSA_PSS,
        hashAlg: pkcs11js.CKM_SHA512,
        mgf: pkcs11js.CKG_MGF1_SHA512,
        saltLen: 64,
      };
  }
}

/** DER of the named-curve OIDs, as CKA_EC_PARAMS wants them. */
export const EC_PARAMS: Readonly<Record<'P-256' | 'P-384', Buffer>> = {
  'P-256': Buffer.from('06082a8648ce3d030107', 'hex'),
  'P-384': Buffer.from('06052b81040022', 'hex'),
};

/** CKM_ECDSA returns r || s; X.509 consumers expect the DER SEQUENCE { INTEGER r, INTEGER s }. */
export function ecdsaRawToDer(raw: Buffer): Buffer {
  const half = raw.length / 2;
  const int = (bytes: Buffer): Buffer => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    let v = bytes.subarray(i);
    if (v[0] & 0x80) v = Buffer.concat([Buffer.from([0]), v]);
    return Buffer.concat([Buffer.from([0x02, v.length]), v]);
  };
  const body = Buffer.concat([int(raw.subarray(0, half)), int(raw.subarray(half))]);
  const len = body.length < 0x80 ? Buffer.from([body.length]) : Buffer.from([0x81, body.length]);
  return Buffer.concat([Buffer.from([0x30]), len, body]);
}

/** SPKI DER from an RSA public key's modulus and exponent. */
export function rsaSpki(modulus: Buffer, exponent: Buffer): Buffer {
  return createPublicKey({
    key: { kty: 'RSA', n: b64url(modulus), e: b64url(exponent) },
    format: 'jwk',
  }).export({ type: 'spki', format: 'der' });
}

/**
 * SPKI DER from CKA_EC_POINT. PKCS#11 v2.40 says the point is a DER OCTET STRING around the uncompressed
 * point (04 || X || Y); some modules return the bare point, so both are accepted.
 */
export function ecSpki(keyType: KeyType, ecPoint: Buffer): Buffer {
  const spec = KEY_TYPE_SPECS[keyType];
  const size = spec.bits / 8;
  let point = ecPoint;
  if (point.length !== 2 * size + 1 && point[0] === 0x04) {
    const headerLength = point[1] & 0x80 ? 2 + (point[1] & 0x7f) : 2;
    point = point.subarray(headerLength);
  }
  if (point.length !== 2 * size + 1 || point[0] !== 0x04) {
    throw new Error(`unexpected EC point encoding for ${keyType}`);
  }
  return createPublicKey({
    key: {
      kty: 'EC',
      crv: spec.curve,
      x: b64url(point.subarray(1, 1 + size)),
      y: b64url(point.subarray(1 + size)),
    },
    format: 'jwk',
  }).export({ type: 'spki', format: 'der' });
}

function b64url(buffer: Buffer): string {
  return buffer.toString('base64url');
}
