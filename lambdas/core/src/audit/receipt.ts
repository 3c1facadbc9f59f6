/**
 * Receipts: the proof, handed to whoever asked for a signature, that its event is in the audit log.
 *
 * A receipt names an entry (chain, sequence, entry hash) and the event's leaf in the entry's Merkle tree
 * (index, tree size, inclusion path). Checking it needs the event's text and the entry's other hashed
 * fields (prevHash, timestamp): the path yields the tree root, and the root with those fields must hash
 * to the entry hash. A receipt may also carry the audit key's signature over its entry as the chain's
 * head. That the entry itself is still linked into its chain and covered by a signed checkpoint is
 * `proveReceipt`'s second half, over a stored log.
 */
import { createHash, type KeyObject } from 'node:crypto';
import { parseCheckpointBody, verifyCheckpointSignature } from './checkpoint';
import { entryHash } from './entry';
import { inclusionPaths, merkleRoot, rootFromInclusionPath } from './merkle';
import { verifySignedHead } from './signed-head';
import type {
  AuditEntry,
  AuditEvent,
  AuditReceipt,
  CheckpointBody,
  StoredAuditLog,
  StoredCheckpoint,
} from './types';

/** One receipt per event of a freshly built entry, in event order. */
export function receiptsOf(entry: AuditEntry): AuditReceipt[] {
  const paths = inclusionPaths(entry.events);
  return entry.events.map((_, leafIndex) => ({
    chain: entry.chain,
    sequence: entry.sequence,
    hash: entry.hash,
    leafIndex,
    treeSize: entry.events.length,
    path: paths[leafIndex],
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
  /** Every event of the receipt's entry, when they all hash to the entry hash the receipt names. */
  readonly entryEvents?: readonly string[];
  /** The signed checkpoint that covers the entry, if any. */
  readonly checkpoint?: number;
  /** True when that checkpoint was read from the anchor store (outside the table). */
  readonly anchored?: boolean;
  /** What was checked, in order; on failure the last line says what failed. */
  readonly steps: readonly string[];
}

/**
 * Checks a receipt against a stored log: the receipt's signed head (if it carries one) is the audit
 * key's, the entry is there with the receipt's hash, the leaf's text and the path lead to the entry hash,
 * and the chain links from the entry up to the head recorded by the newest signed checkpoint that covers
 * it (an anchored one when anchors are given). A receipt with a signed head is proven before any
 * checkpoint covers it; one without needs the checkpoint. A signed head whose entry the table no longer
 * holds is named as what it is: the log was cut short or rewound after the receipt was handed out.
 */
export function proveReceipt(
  receipt: AuditReceipt,
  log: StoredAuditLog,
  publicKey: KeyObject | ((text: string, signature: Buffer) => boolean),
  anchors?: readonly StoredCheckpoint[],
): ReceiptProof {
  const signed = (text: string, signature: Buffer): boolean =>
    typeof publicKey === 'function'
      ? publicKey(text, signature)
      : verifyCheckpointSignature(text, signature, publicKey);
  const steps: string[] = [];
  const fail = (why: string, extra: Partial<ReceiptProof> = {}): ReceiptProof => ({
    ok: false,
    steps: [...steps, `FAILED: ${why}`],
    ...extra,
  });
  const where = `${receipt.chain}/${receipt.sequence}`;
  let headSigned = false;
  if (receipt.head) {
    if (!verifySignedHead(receipt, receipt.head, publicKey)) {
      return fail(`the receipt's head signature does not verify with the audit public key`);
    }
    headSigned = true;
    steps.push(`the audit key signed entry ${where} as its chain's head when it was written`);
  }
  const chain = log.entries.get(receipt.chain) ?? [];
  const bySequence = new Map(chain.filter((e) => e.sequence !== undefined).map((e) => [e.sequence!, e]));
  const entry = bySequence.get(receipt.sequence);
  if (!entry || entry.events === undefined || entry.prevHash === undefined || entry.timestamp === undefined) {
    return fail(
      headSigned
        ? `the log no longer holds entry ${where}, which the audit key signed: the chain was cut short or rewound`
        : `no entry ${where} in the log`,
    );
  }
  if (entry.hash !== receipt.hash) {
    return fail(
      headSigned
        ? `another entry stands at ${where} than the one the audit key signed: the chain was rewound and written again`
        : 'the stored entry has another hash than the receipt',
    );
  }
  const eventText = entry.events[receipt.leafIndex];
  if (eventText === undefined || entry.events.length !== receipt.treeSize) {
    return fail('the entry has no such leaf (tree size differs)');
  }
  if (!receiptCovers(receipt, eventText, { prevHash: entry.prevHash, timestamp: entry.timestamp })) {
    return fail('the inclusion path does not lead to the entry hash', { eventText });
  }
  steps.push(
    `leaf ${receipt.leafIndex} of ${receipt.treeSize} is in entry ${where} (${receipt.path.length} path hashes)`,
  );
  const whole =
    entryHash(
      receipt.chain,
      receipt.sequence,
      entry.prevHash,
      merkleRoot(entry.events),
      entry.events.length,
      entry.timestamp,
    ) === receipt.hash;
  const proven = { eventText, ...(whole ? { entryEvents: entry.events } : {}) };

  const anchored = anchors !== undefined;
  const covering = coveringCheckpoint(receipt, anchors ?? log.checkpoints, signed);
  const name = `${anchored ? 'anchored ' : ''}checkpoint`;
  if (!covering) {
    if (headSigned) {
      steps.push(`no signed ${name} covers the entry yet`);
      return { ok: true, ...proven, steps };
    }
    return fail(`no signed ${name} covers the entry yet`, proven);
  }
  const recorded = covering.heads.find((h) => h.chain === receipt.chain)!;
  const broken = brokenLink(receipt, bySequence, recorded, `${name} ${covering.sequence}`);
  if (broken) return fail(broken.why, broken.withEvent ? proven : {});
  steps.push(`entry linked to the head recorded by signed ${name} ${covering.sequence}`);
  return { ok: true, ...proven, checkpoint: covering.sequence, anchored, steps };
}

/** A signature a request returned: raw, or its CMS's SignerInfo's; with its document's index in a `documents` request. */
export interface ReturnedSignature {
  readonly signature: Buffer;
  readonly documentIndex?: number;
}

/**
 * Ties what a request returned to its receipt's entry: the leaf is one of the request's `signature.made`
 * events, and the entry (all of whose events hash to the entry hash the receipt names) holds, for every
 * returned signature, the request's `signature.made` with its hash and document index. The signer appends
 * an attempt's events in one entry, so the one receipt of a `documents` request covers every document.
 */
export function proveReturnedSignatures(
  requestId: string,
  proof: Pick<ReceiptProof, 'eventText' | 'entryEvents'>,
  returned: readonly ReturnedSignature[],
): { readonly ok: boolean; readonly steps: readonly string[] } {
  const made = (proof.entryEvents ?? []).map(parseEvent).filter(isSignatureOf(requestId));
  const leaf = proof.eventText === undefined ? undefined : parseEvent(proof.eventText);
  if (!leaf || !isSignatureOf(requestId)(leaf)) {
    return { ok: false, steps: [`FAILED: the leaf is not a signature.made event of request ${requestId}`] };
  }
  if (returned.length === 0)
    return { ok: false, steps: [`FAILED: request ${requestId} returned no signature`] };
  if (proof.entryEvents === undefined) {
    return { ok: false, steps: ["FAILED: the entry's events do not hash to the entry hash"] };
  }
  const steps: string[] = [];
  let ok = true;
  for (const r of returned) {
    const hash = createHash('sha256').update(r.signature).digest('hex');
    const document = r.documentIndex === undefined ? '' : `document ${r.documentIndex}: `;
    const found = made.some((e) => e.signatureHash === hash && e.documentIndex === r.documentIndex);
    ok &&= found;
    steps.push(
      found
        ? `${document || 'leaf: '}signature.made for ${requestId}, hash of the returned signature`
        : `FAILED: ${document}no signature.made for ${requestId} in the entry with the hash of the returned signature`,
    );
  }
  return { ok, steps };
}

function parseEvent(text: string): AuditEvent | undefined {
  try {
    return JSON.parse(text) as AuditEvent;
  } catch {
    return undefined;
  }
}

type SignatureMade = Extract<AuditEvent, { type: 'signature.made' }>;

const isSignatureOf =
  (requestId: string) =>
  (e: AuditEvent | undefined): e is SignatureMade =>
    e?.type === 'signature.made' && e.requestId === requestId;

type Entry = StoredAuditLog['entries'] extends ReadonlyMap<number, readonly (infer E)[]> ? E : never;

/** The newest validly signed checkpoint that records the receipt's chain at or beyond its entry. */
function coveringCheckpoint(
  receipt: AuditReceipt,
  stored: readonly StoredCheckpoint[],
  signed: (text: string, signature: Buffer) => boolean,
): CheckpointBody | undefined {
  const checkpoints: CheckpointBody[] = [];
  for (const cp of stored) {
    const body = cp.body === undefined ? undefined : parseCheckpointBody(cp.body);
    if (body && cp.body && cp.signature && signed(cp.body, cp.signature)) {
      checkpoints.push(body);
    }
  }
  checkpoints.sort((a, b) => b.sequence - a.sequence);
  return checkpoints.find((cp) =>
    cp.heads.some((h) => h.chain === receipt.chain && h.sequence >= receipt.sequence),
  );
}

/**
 * Walks back from the checkpointed head to the entry: each entry's hash must be its successor's prevHash
 * and recompute from its content. Why the walk breaks (and whether the failure shows the event), or undefined.
 */
function brokenLink(
  receipt: AuditReceipt,
  bySequence: ReadonlyMap<number, Entry>,
  recorded: { readonly sequence: number; readonly hash: string },
  checkpointName: string,
): { why: string; withEvent: boolean } | undefined {
  let expected = recorded.hash;
  for (let s = recorded.sequence; s >= receipt.sequence; s--) {
    const e = bySequence.get(s);
    if (!e || e.hash !== expected || e.events === undefined || e.prevHash === undefined) {
      return {
        why: `chain ${receipt.chain} broken at ${s} between the entry and ${checkpointName}`,
        withEvent: true,
      };
    }
    const recomputed = entryHash(
      receipt.chain,
      s,
      e.prevHash,
      merkleRoot(e.events),
      e.events.length,
      e.timestamp ?? Number.NaN,
    );
    if (recomputed !== e.hash) {
      return { why: `entry ${receipt.chain}/${s} does not hash to its stored hash`, withEvent: false };
    }
    expected = e.prevHash;
  }
  return undefined;
}
