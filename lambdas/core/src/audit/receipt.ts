/**
 * Receipts: the proof, handed to whoever asked for a signature, that its event is in the audit log.
 *
 * A receipt names an entry (chain, sequence, entry hash) and the event's leaf in the entry's Merkle tree
 * (index, tree size, inclusion path). Checking it needs the event's text and the entry's other hashed
 * fields (prevHash, timestamp): the path yields the tree root, and the root with those fields must hash
 * to the entry hash. That the entry itself is still linked into its chain and covered by a signed
 * checkpoint is `proveReceipt`'s second half, over a stored log.
 */
import type { KeyObject } from 'node:crypto';
import { parseCheckpointBody, verifyCheckpointSignature } from './checkpoint';
import { entryHash } from './entry';
import { inclusionPath, merkleRoot, rootFromInclusionPath } from './merkle';
import type { AuditEntry, AuditReceipt, CheckpointBody, StoredAuditLog } from './types';

/** One receipt per event of a freshly built entry, in event order. */
export function receiptsOf(entry: AuditEntry): AuditReceipt[] {
  return entry.events.map((_, leafIndex) => ({
    chain: entry.chain,
    sequence: entry.sequence,
    hash: entry.hash,
    leafIndex,
    treeSize: entry.events.length,
    path: inclusionPath(entry.events, leafIndex),
  }));
}

/** True when the receipt proves `eventText` is in the entry with these hashed fields. */
export function receiptCovers(
  receipt: AuditReceipt,
  eventText: string,
  entry: { readonly prevHash: string; readonly timestamp: number },
): boolean {
  const root = rootFromInclusionPath(eventText, receipt.leafIndex, receipt.treeSize, receipt.path);
  if (root === undefined) return false;
  return (
    entryHash(receipt.chain, receipt.sequence, entry.prevHash, root, receipt.treeSize, entry.timestamp) ===
    receipt.hash
  );
}

export interface ReceiptProof {
  readonly ok: boolean;
  /** The event the receipt points at (its canonical text), when the entry is there. */
  readonly eventText?: string;
  /** The signed checkpoint that covers the entry, if any. */
  readonly checkpoint?: number;
  /** What was checked, in order; on failure the last line says what failed. */
  readonly steps: readonly string[];
}

/**
 * Checks a receipt against a stored log: the entry is there with the receipt's hash, the leaf's text
 * and the path lead to the entry hash, and the chain links from the entry up to the head recorded by the
 * newest checkpoint whose signature verifies with the audit public key.
 */
export function proveReceipt(receipt: AuditReceipt, log: StoredAuditLog, publicKey: KeyObject): ReceiptProof {
  const steps: string[] = [];
  const fail = (why: string, extra: Partial<ReceiptProof> = {}): ReceiptProof => ({
    ok: false,
    steps: [...steps, `FAILED: ${why}`],
    ...extra,
  });
  const chain = log.entries.get(receipt.chain) ?? [];
  const bySequence = new Map(chain.filter((e) => e.sequence !== undefined).map((e) => [e.sequence!, e]));
  const entry = bySequence.get(receipt.sequence);
  if (!entry || entry.events === undefined || entry.prevHash === undefined || entry.timestamp === undefined) {
    return fail(`no entry ${receipt.chain}/${receipt.sequence} in the log`);
  }
  if (entry.hash !== receipt.hash) return fail('the stored entry has another hash than the receipt');
  const eventText = entry.events[receipt.leafIndex];
  if (eventText === undefined || entry.events.length !== receipt.treeSize) {
    return fail('the entry has no such leaf (tree size differs)');
  }
  if (!receiptCovers(receipt, eventText, { prevHash: entry.prevHash, timestamp: entry.timestamp })) {
    return fail('the inclusion path does not lead to the entry hash', { eventText });
  }
  steps.push(
    `leaf ${receipt.leafIndex} of ${receipt.treeSize} is in entry ${receipt.chain}/${receipt.sequence} (${receipt.path.length} path hashes)`,
  );

  const checkpoints: CheckpointBody[] = [];
  for (const cp of log.checkpoints) {
    const body = cp.body === undefined ? undefined : parseCheckpointBody(cp.body);
    if (body && cp.body && cp.signature && verifyCheckpointSignature(cp.body, cp.signature, publicKey)) {
      checkpoints.push(body);
    }
  }
  checkpoints.sort((a, b) => b.sequence - a.sequence);
  const covering = checkpoints.find((cp) =>
    cp.heads.some((h) => h.chain === receipt.chain && h.sequence >= receipt.sequence),
  );
  if (!covering) return fail('no signed checkpoint covers the entry yet', { eventText });
  const recorded = covering.heads.find((h) => h.chain === receipt.chain)!;
  // Walk back from the checkpointed head to the entry: each entry's hash must be its successor's prevHash.
  let expected = recorded.hash;
  for (let s = recorded.sequence; s >= receipt.sequence; s--) {
    const e = bySequence.get(s);
    if (!e || e.hash !== expected || e.events === undefined || e.prevHash === undefined) {
      return fail(
        `chain ${receipt.chain} broken at ${s} between the entry and checkpoint ${covering.sequence}`,
        {
          eventText,
        },
      );
    }
    const recomputed = entryHash(
      receipt.chain,
      s,
      e.prevHash,
      merkleRoot(e.events),
      e.events.length,
      e.timestamp ?? Number.NaN,
    );
    if (recomputed !== e.hash) return fail(`entry ${receipt.chain}/${s} does not hash to its stored hash`);
    expected = e.prevHash;
  }
  steps.push(`entry linked to the head recorded by signed checkpoint ${covering.sequence}`);
  return { ok: true, eventText, checkpoint: covering.sequence, steps };
}
