/**
 * Checkpoints: every chain head at one moment, signed by the audit key.
 *
 *   signed bytes = canonicalJson(body)            (UTF-8)
 *   signature    = ECDSA-P384 over SHA-384(signed bytes), DER   (the HSM signs the digest: CKM_ECDSA)
 *   hash         = SHA-256(signed bytes)           (the next checkpoint's prevHash)
 *
 * Anyone with the audit public key verifies with plain `crypto.verify('sha384', bytes, key, sig)`.
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { canonicalJson, type CanonicalValue } from './canonical';
import { GENESIS_HASH } from './entry';
import type { AuditSigner, CheckpointBody, ChainHead, SignedCheckpoint } from './types';

export function checkpointBody(input: {
  readonly previous?: { readonly sequence: number; readonly hash: string };
  readonly heads: readonly ChainHead[];
  readonly chains: number;
  readonly createdAt: number;
  readonly signer: Pick<AuditSigner, 'keyLabel' | 'algorithm'>;
}): CheckpointBody {
  return {
    version: 1,
    sequence: (input.previous?.sequence ?? 0) + 1,
    prevHash: input.previous?.hash ?? GENESIS_HASH,
    createdAt: input.createdAt,
    chains: input.chains,
    heads: [...input.heads]
      .sort((a, b) => a.chain - b.chain)
      .map((h) => ({ chain: h.chain, sequence: h.sequence, hash: h.hash })),
    keyLabel: input.signer.keyLabel,
    algorithm: input.signer.algorithm,
  };
}

export function canonicalCheckpoint(body: CheckpointBody): string {
  return canonicalJson(body as unknown as CanonicalValue);
}

export async function signCheckpoint(body: CheckpointBody, signer: AuditSigner): Promise<SignedCheckpoint> {
  const bytes = Buffer.from(canonicalCheckpoint(body), 'utf8');
  const signature = await signer.sign(createHash('sha384').update(bytes).digest());
  return { body, signature, hash: createHash('sha256').update(bytes).digest('hex') };
}

/** Verifies a checkpoint's signature over its stored canonical text. */
export function verifyCheckpointSignature(
  canonicalBody: string,
  signature: Buffer,
  publicKey: KeyObject,
): boolean {
  try {
    return verify('sha384', Buffer.from(canonicalBody, 'utf8'), publicKey, signature);
  } catch {
    return false;
  }
}

/** A public key from SPKI DER or PEM. */
export function auditPublicKey(spkiOrPem: Buffer | string): KeyObject {
  return typeof spkiOrPem === 'string'
    ? createPublicKey(spkiOrPem)
    : createPublicKey({ key: spkiOrPem, format: 'der', type: 'spki' });
}

export function checkpointHashOf(canonicalBody: string): string {
  return createHash('sha256').update(canonicalBody, 'utf8').digest('hex');
}

/** Parses a stored body; undefined when it is not a well-formed checkpoint body in canonical form. */
export function parseCheckpointBody(text: string): CheckpointBody | undefined {
  try {
    const body = JSON.parse(text) as CheckpointBody;
    const int = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 0;
    const hex = (v: unknown): boolean => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);
    const ok =
      body.version === 1 &&
      int(body.sequence) &&
      hex(body.prevHash) &&
      int(body.createdAt) &&
      int(body.chains) &&
      Array.isArray(body.heads) &&
      body.heads.every((h) => int(h.chain) && int(h.sequence) && hex(h.hash));
    // Only the canonical text is signed: a re-serialised body that differs is not the signed one.
    return ok && canonicalCheckpoint(body) === text ? body : undefined;
  } catch {
    return undefined;
  }
}
