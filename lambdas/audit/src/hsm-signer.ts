/**
 * The audit key in the HSM: an EC P-384 token key pair, non-extractable, found by label. The signer
 * hands the checkpoint digest to the HSM (CKM_ECDSA over SHA-384), so the private key never leaves it.
 */
import type { KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { AuditNotReadyError, auditPublicKey, type AuditSigner } from '@pipeline/core/audit';
import type { Hsm } from '@pipeline/core/shared';

export const AUDIT_KEY_TYPE = 'EC-P384';

export async function hsmAuditSigner(
  hsm: Pick<Hsm, 'findPrivateKey' | 'signDigest'>,
  keyLabel: string,
): Promise<AuditSigner> {
  const ref = await hsm.findPrivateKey(keyLabel, AUDIT_KEY_TYPE);
  if (!ref) throw new AuditNotReadyError(`audit key ${keyLabel} is not on the token`);
  return {
    keyLabel,
    algorithm: 'ECDSA-P384-SHA384',
    sign: (digest) =>
      hsm.signDigest(ref, digest, { digestAlgorithm: 'SHA-384', signatureAlgorithm: 'ECDSA' }),
  };
}

/**
 * Creates the audit key pair on the token if it is missing (idempotent). Returns its public key (SPKI
 * DER) and whether it was created.
 */
export async function ensureAuditKey(
  hsm: Pick<Hsm, 'findPublicKeySpki' | 'findPrivateKey' | 'generateKeyPair'>,
  keyLabel: string,
): Promise<{ spki: Buffer; created: boolean }> {
  const spki = await hsm.findPublicKeySpki(keyLabel);
  const priv = await hsm.findPrivateKey(keyLabel, AUDIT_KEY_TYPE);
  if (spki && priv) return { spki, created: false };
  if (spki || priv) {
    throw new AuditNotReadyError(`audit key ${keyLabel} is only half present on the token`);
  }
  const pair = await hsm.generateKeyPair(AUDIT_KEY_TYPE, { extractable: false, tokenLabel: keyLabel });
  return { spki: pair.publicKeySpki, created: true };
}

/** The audit public key from a PEM file, else from the token (by label). */
export async function loadAuditPublicKey(source: {
  readonly file?: string;
  readonly hsm?: Pick<Hsm, 'findPublicKeySpki'>;
  readonly keyLabel: string;
}): Promise<KeyObject> {
  if (source.file && existsSync(source.file)) return auditPublicKey(readFileSync(source.file, 'utf8'));
  const spki = await source.hsm?.findPublicKeySpki(source.keyLabel);
  if (!spki) throw new AuditNotReadyError(`no public key for audit key ${source.keyLabel}`);
  return auditPublicKey(spki);
}

export function spkiToPem(spki: Buffer): string {
  const b64 = spki.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN PUBLIC KEY-----\n${b64.trimEnd()}\n-----END PUBLIC KEY-----\n`;
}

/**
 * Bootstrap provisioner: makes sure the audit key pair exists and its public key is in `pemFile` (for
 * verifiers without HSM access). Returns what it changed, or undefined when everything was in place.
 */
export async function provisionAuditKey(
  hsm: Pick<Hsm, 'findPublicKeySpki' | 'findPrivateKey' | 'generateKeyPair'>,
  keyLabel: string,
  pemFile: string,
): Promise<string | undefined> {
  const { spki, created } = await ensureAuditKey(hsm, keyLabel);
  const pem = spkiToPem(spki);
  const current = existsSync(pemFile) ? readFileSync(pemFile, 'utf8') : undefined;
  if (current === pem && !created) return undefined;
  mkdirSync(dirname(pemFile), { recursive: true });
  writeFileSync(pemFile, pem);
  return created ? `created audit key ${keyLabel}, public key in ${pemFile}` : `wrote ${pemFile}`;
}
