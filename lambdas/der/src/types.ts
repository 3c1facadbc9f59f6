import type { DigestAlgorithm, KeyType, SignatureAlgorithm } from '@pipeline/core/shared';
import type { SignerIdentity } from '@pipeline/core/identity';

export interface SignOptions {
  readonly digestAlgorithm: DigestAlgorithm;
  readonly signatureAlgorithm: SignatureAlgorithm;
}

/**
 * Signs a pre-computed digest with a private key that stays elsewhere (the HSM):
 * `(d, o) => hsm.signDigest(key, d, o)`. ECDSA signatures must come back DER-encoded.
 */
export type SignDigest = (digest: Buffer, options: SignOptions) => Promise<Buffer>;

export interface BuildCsrInput {
  readonly subject: SignerIdentity;
  readonly keyType: KeyType;
  /** SubjectPublicKeyInfo (DER) of the key that signs the CSR. */
  readonly publicKeySpki: Buffer;
  readonly sign: SignDigest;
}

/** A CSR whose signature was verified against its own public key (proof of possession). */
export interface VerifiedCsr {
  readonly keyType: KeyType;
  /** SubjectPublicKeyInfo, DER, exactly as in the CSR. */
  readonly publicKeySpki: Buffer;
  /** The subject Name, DER, exactly as in the CSR (never certified as such: the CA compares it). */
  readonly subjectDer: Buffer;
}

/** The signature scheme a key type uses for CSRs and certificates. */
export interface SignatureScheme extends SignOptions {
  /** X.509 AlgorithmIdentifier OID. */
  readonly oid: string;
}
