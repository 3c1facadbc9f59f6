/**
 * Signed heads: the audit key's signature over an entry as its chain's head, made by the writer before
 * the entry's receipts are handed out.
 *
 *   signed bytes = canonicalJson({ version: 1, type: 'audit-head', chain, sequence, hash, keyLabel,
 *                                  algorithm })                   (UTF-8)
 *   signature    = ECDSA-P384 over SHA-384(signed bytes), DER      (the same key as checkpoints)
 *
 * A receipt that carries one proves, by itself, that the log once held its entry at that position: if
 * the table is later cut short or rewound, the receipt still names what was there. The entry hash covers
 * the entry's timestamp, so the statement needs no time of its own.
 */
import { createHash, type KeyObject } from 'node:crypto';
import { canonicalJson } from './canonical';
import { verifyCheckpointSignature } from './checkpoint';
import type { AuditSigner, ChainHead, SignedHead } from './types';

export function headStatement(head: ChainHead, signer: Pick<SignedHead, 'keyLabel' | 'algorithm'>): string {
  return canonicalJson({
    version: 1,
    type: 'audit-head',
    chain: head.chain,
    sequence: head.sequence,
    hash: head.hash,
    keyLabel: signer.keyLabel,
    algorithm: signer.algorithm,
  });
}

export async function signHead(head: ChainHead, signer: AuditSigner): Promise<SignedHead> {
  const digest = createHash('sha384').update(headStatement(head, signer), 'utf8').digest();
  const signature = await signer.sign(digest);
  return { keyLabel: signer.keyLabel, algorithm: signer.algorithm, signature: signature.toString('base64') };
}

/** True when `signed` is the audit key's signature over this head (or a test's check says so). */
export function verifySignedHead(
  head: ChainHead,
  signed: SignedHead,
  publicKey: KeyObject | ((text: string, signature: Buffer) => boolean),
): boolean {
  if (signed.algorithm !== 'ECDSA-P384-SHA384' || typeof signed.signature !== 'string') return false;
  const text = headStatement(head, signed);
  const signature = Buffer.from(signed.signature, 'base64');
  return typeof publicKey === 'function'
    ? publicKey(text, signature)
    : verifyCheckpointSignature(text, signature, publicKey);
}
