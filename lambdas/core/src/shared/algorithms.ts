/**
 * The key types, digest algorithms and signature schemes the service offers, and which fit together.
 * Pure data: the HSM adapter maps these names to PKCS#11 mechanisms, the API validates against them.
 */

export const KEY_TYPES = ['RSA-2048', 'RSA-3072', 'RSA-4096', 'EC-P256', 'EC-P384'] as const;
export type KeyType = (typeof KEY_TYPES)[number];

export const DIGEST_ALGORITHMS = ['SHA-256', 'SHA-384', 'SHA-512'] as const;
export type DigestAlgorithm = (typeof DIGEST_ALGORITHMS)[number];

export const SIGNATURE_ALGORITHMS = ['RSASSA-PKCS1-v1_5', 'RSASSA-PSS', 'ECDSA'] as const;
export type SignatureAlgorithm = (typeof SIGNATURE_ALGORITHMS)[number];

export type KeyFamily = 'RSA' | 'EC';

/** Digest length in bytes: a submitted digest must have exactly this length. */
export const DIGEST_LENGTH: Readonly<Record<DigestAlgorithm, number>> = {
  'SHA-256': 32,
  'SHA-384': 48,
  'SHA-512': 64,
};

export interface KeyTypeSpec {
  readonly family: KeyFamily;
  /** RSA modulus length in bits, or the EC field size in bits. */
  readonly bits: number;
  /** Named curve for EC keys (JOSE / Node.js name). */
  readonly curve?: 'P-256' | 'P-384';
}

export const KEY_TYPE_SPECS: Readonly<Record<KeyType, KeyTypeSpec>> = {
  'RSA-2048': { family: 'RSA', bits: 2048 },
  'RSA-3072': { family: 'RSA', bits: 3072 },
  'RSA-4096': { family: 'RSA', bits: 4096 },
  'EC-P256': { family: 'EC', bits: 256, curve: 'P-256' },
  'EC-P384': { family: 'EC', bits: 384, curve: 'P-384' },
};

export function isKeyType(value: unknown): value is KeyType {
  return typeof value === 'string' && (KEY_TYPES as readonly string[]).includes(value);
}

/** The signature schemes a key type can produce. */
export function signatureAlgorithmsFor(keyType: KeyType): readonly SignatureAlgorithm[] {
  return KEY_TYPE_SPECS[keyType].family === 'RSA' ? ['RSASSA-PKCS1-v1_5', 'RSASSA-PSS'] : ['ECDSA'];
}

export function defaultSignatureAlgorithm(keyType: KeyType): SignatureAlgorithm {
  return signatureAlgorithmsFor(keyType)[0];
}

export function fits(keyType: KeyType, signatureAlgorithm: SignatureAlgorithm): boolean {
  return signatureAlgorithmsFor(keyType).includes(signatureAlgorithm);
}

/** Node.js hash name for a digest algorithm ('SHA-256' -> 'sha256'). */
export function nodeHashName(digestAlgorithm: DigestAlgorithm): 'sha256' | 'sha384' | 'sha512' {
  return digestAlgorithm.replace('SHA-', 'sha') as 'sha256' | 'sha384' | 'sha512';
}
