/**
 * Entry hashing and chain choice.
 *
 *   entryHash = SHA-256( canonicalJson(["audit-entry/v1", chain, sequence, prevHash, event, timestamp]) )
 *
 * where `event` is the event's canonical JSON *text* (a string inside the array), so the hash covers the
 * exact stored bytes. The leading tag keeps entry hashes apart from any other SHA-256 use.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical';
import { AuditEventInvalidError } from './errors';
import { entityIdOf, validateAuditEvent } from './events';
import type { AuditEntry, AuditEvent, ChainHead, Sha256Hex } from './types';

/** prevHash of the first entry of every chain (and of the first checkpoint). */
export const GENESIS_HASH: Sha256Hex = '0'.repeat(64);

const ENTRY_TAG = 'audit-entry/v1';

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
  event: string,
  timestamp: number,
): Sha256Hex {
  return sha256Hex(canonicalJson([ENTRY_TAG, chain, sequence, prevHash, event, timestamp]));
}

/**
 * The chain an entity's events go to: the first 4 bytes of SHA-256(entity id) modulo the chain count.
 * Spreads load over `chains` head items while keeping one entity's events in order on one chain.
 */
export function chainFor(entityId: string, chains: number): number {
  if (!Number.isInteger(chains) || chains < 1) throw new AuditEventInvalidError('chains', 'must be >= 1');
  return createHash('sha256').update(entityId).digest().readUInt32BE(0) % chains;
}

export function chainOfEvent(event: AuditEvent, chains: number): number {
  return chainFor(entityIdOf(event), chains);
}

/** Builds the entries that follow `head` for these events (validated, canonically encoded, linked). */
export function buildEntries(head: ChainHead, events: readonly AuditEvent[], now: number): AuditEntry[] {
  const entries: AuditEntry[] = [];
  let prev = head;
  for (const event of events) {
    const text = canonicalJson(validateAuditEvent(event));
    const sequence = prev.sequence + 1;
    const hash = entryHash(head.chain, sequence, prev.hash, text, now);
    entries.push({ chain: head.chain, sequence, prevHash: prev.hash, event: text, timestamp: now, hash });
    prev = { chain: head.chain, sequence, hash };
  }
  return entries;
}

/** Recomputes an entry's hash from its content. */
export function hashOfEntry(entry: Omit<AuditEntry, 'hash'>): Sha256Hex {
  return entryHash(entry.chain, entry.sequence, entry.prevHash, entry.event, entry.timestamp);
}
