/**
 * Entry hashing and chain choice. An entry holds a batch of events (whatever one writer committed at
 * once) under a Merkle tree (merkle.ts):
 *
 *   entryHash = SHA-256( canonicalJson(["audit-entry/v2", chain, sequence, prevHash, root, size, timestamp]) )
 *
 * where `root` is the RFC 9162 tree hash over the events' canonical JSON *texts* (the exact stored
 * bytes) and `size` their number. The leading tag keeps entry hashes apart from any other SHA-256 use.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical';
import { AuditEventInvalidError } from './errors';
import { validateAuditEvent } from './events';
import { merkleRoot } from './merkle';
import type { AuditEntry, AuditEvent, ChainHead, Sha256Hex } from './types';

/** prevHash of the first entry of every chain (and of the first checkpoint). */
export const GENESIS_HASH: Sha256Hex = '0'.repeat(64);

const ENTRY_TAG = 'audit-entry/v2';

export function sha256Hex(data: string | Buffer): Sha256Hex {
  return createHash('sha256').update(data).digest('hex');
}

export function genesisHead(chain: number): ChainHead {
  return { chain, sequence: 0, hash: GENESIS_HASH };
}

export function entryHash(
  chain: number,
  sequence: number,
  prevHash: string,
  root: Sha256Hex,
  size: number,
  timestamp: number,
): Sha256Hex {
  return sha256Hex(canonicalJson([ENTRY_TAG, chain, sequence, prevHash, root, size, timestamp]));
}

/** The entry that follows `head` for this batch of events (validated, canonically encoded, linked). */
export function buildEntry(head: ChainHead, events: readonly AuditEvent[], now: number): AuditEntry {
  if (events.length === 0) throw new AuditEventInvalidError('events', 'an entry holds at least one event');
  const texts = events.map((event) => canonicalJson(validateAuditEvent(event)));
  const sequence = head.sequence + 1;
  const hash = entryHash(head.chain, sequence, head.hash, merkleRoot(texts), texts.length, now);
  return { chain: head.chain, sequence, prevHash: head.hash, events: texts, timestamp: now, hash };
}
