import { X509Certificate } from 'node:crypto';
import type { KeyType, Hsm, PrivateKeyRef } from '@pipeline/core/shared';
import {
  keyTypeOfSpki,
  parseCertificate,
  pemToDer,
  type CertificateSigner,
  type ParsedCertificate,
} from '@pipeline/der';
import { CaNotReadyError } from './errors';
import type { CaCertificates } from '@pipeline/core/pki';

/** A CA key on the token with its public key (SPKI DER). */
export interface CaKey {
  readonly ref: PrivateKeyRef;
  readonly spki: Buffer;
}

/** Finds a CA key pair by label; undefined when neither half exists. */
export async function findCaKey(hsm: Hsm, label: string, keyType: KeyType): Promise<CaKey | undefined> {
  const spki = await hsm.findPublicKeySpki(label);
  if (!spki) return undefined;
  const actual = keyTypeOfSpki(spki);
  if (actual !== keyType) {
    throw new CaNotReadyError(
      `CA key ${label} is ${actual ?? 'of an unsupported type'}, configured ${keyType}`,
    );
  }
  const ref = await hsm.findPrivateKey(label, keyType);
  if (!ref) throw new CaNotReadyError(`CA key ${label} has a public key but no private key on the token`);
  return { ref, spki };
}

/** The parsed CA certificate pair, checked to belong together (issuing signed by root, root self-signed). */
export interface CaChain {
  readonly root: ParsedCertificate;
  readonly issuing: ParsedCertificate;
  readonly pems: CaCertificates;
}

export function parseCaChain(pems: CaCertificates): CaChain {
  try {
    const rootX509 = new X509Certificate(pems.rootPem);
    const issuingX509 = new X509Certificate(pems.issuingPem);
    if (!rootX509.verify(rootX509.publicKey) || !issuingX509.verify(rootX509.publicKey)) {
      throw new Error('signature');
    }
    return {
      root: parseCertificate(pemToDer(pems.rootPem)),
      issuing: parseCertificate(pemToDer(pems.issuingPem)),
      pems,
    };
  } catch {
    throw new CaNotReadyError('the CA certificates are unreadable or do not form a chain');
  }
}

/** A signer for signCertificate whose private key stays in the HSM. */
export function hsmSigner(
  hsm: Hsm,
  key: CaKey,
  certificate: ParsedCertificate,
  keyType: KeyType,
): CertificateSigner {
  return {
    name: certificate.subject,
    keyType,
    keyIdentifier: certificate.keyIdentifier,
    sign: (digest, options) => hsm.signDigest(key.ref, digest, options),
  };
}
