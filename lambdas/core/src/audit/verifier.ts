/**
 * Verifies an audit log snapshot: every chain, its head, and the signed checkpoints.
 *
 * Per chain (entries sorted by position = sort key):
 *   - modified:   an entry's content does not hash to its stored hash (or the item is malformed), or
 *                 its successor links to a different hash (the entry was replaced with a re-hashed one);
 *   - deleted:    a sequence from 1 to the head's sequence that no entry claims;
 *   - reordered:  an entry stored at a position other than its own sequence (moved, swapped, shifted);
 *   - inserted:   an entry beyond the head, a second entry for a sequence that the chain does not link
 *                 through, an entry from another chain, or an item whose sort key is not a sequence;
 *   - broken-link: the first entry does not start from the genesis hash;
 *   - head-mismatch: the head item disagrees with the entry at its sequence.
 * Checkpoints (sorted by position): signature (audit public key), sequence and link to the previous
 * checkpoint; each head recorded by a checkpoint with a good signature must still be there unchanged.
 *
 * Anchors (checkpoints copied write-once outside the table), when given: each must verify, link to the
 * one before and leave no gap; each must be in the table unchanged, and every table checkpoint older than
 * the allowed lag must be anchored; every head an anchor recorded must still be in its chain (else
 * `truncated`, or `rewound` when another entry took its place); entries older than the lag that no
 * anchor covers are `uncovered`.
 *
 * What it cannot see: a consistent rewrite of a chain's tail younger than the allowed lag that no anchor
 * covers yet (entry hashes are not keyed, so whoever can write the table can re-hash a tail and move the
 * head; a receipt's signed head still shows it), and anything signed with the audit key itself. Without
 * anchors, also the deletion of the newest checkpoints and a rewrite after the last one.
 */
import type { KeyObject } from 'node:crypto';
import { checkpointHashOf, parseCheckpointBody, verifyCheckpointSignature } from './checkpoint';
import { GENESIS_HASH, entryHash } from './entry';
import { merkleRoot } from './merkle';
import type {
  AuditEntry,
  AuditIssue,
  AuditVerificationReport,
  CheckpointBody,
  StoredAuditEntry,
  StoredAuditLog,
  StoredCheckpoint,
} from './types';

export interface AuditLogSnapshot extends StoredAuditLog {
  /** Configured chain count (chains that hold entries or heads are walked too). */
  readonly chains: number;
}

export interface AnchorCheckOptions {
  /** The checkpoints read from the anchor store. */
  readonly anchors: readonly StoredCheckpoint[];
  /** Epoch ms of the check. */
  readonly now: number;
  /** How old an entry or table checkpoint may be before an anchor must cover it. */
  readonly maxLagMs: number;
}

const HEX64 = /^[0-9a-f]{64}$/;
/** One issue per missing sequence up to this many per gap, then one summary issue. */
const MAX_GAP_ISSUES = 50;

/** A well-formed entry (all fields present and typed) with its position. */
type Entry = AuditEntry & { readonly position: number; readonly contentOk: boolean };

/** Checks a checkpoint signature over its canonical body text (tests may pass a fake). */
export type CheckpointSignatureCheck = (canonicalBody: string, signature: Buffer) => boolean;

/**
 * Verifies the snapshot. `publicKey` is the audit public key (or a signature check); without one every
 * checkpoint is reported, because unsigned checkpoints prove nothing.
 */
export function verifyAuditLog(
  snapshot: AuditLogSnapshot,
  publicKey: KeyObject | CheckpointSignatureCheck | undefined,
  anchoring?: AnchorCheckOptions,
): AuditVerificationReport {
  const issues: AuditIssue[] = snapshot.foreign.map((key) => ({
    kind: 'inserted' as const,
    detail: `item ${key} is not part of the audit log layout`,
  }));
  const chainIds = new Set<number>([...snapshot.entries.keys(), ...snapshot.heads.keys()]);
  for (let c = 0; c < snapshot.chains; c++) chainIds.add(c);

  const byChain = new Map<number, Map<number, Entry[]>>();
  let entryCount = 0;
  for (const chain of [...chainIds].sort((a, b) => a - b)) {
    const stored = snapshot.entries.get(chain) ?? [];
    entryCount += stored.length;
    byChain.set(chain, verifyChain(chain, stored, snapshot.heads.get(chain), issues));
  }

  const cp = verifyCheckpoints(snapshot.checkpoints, publicKey, issues);
  let after = 0;
  for (const body of cp.valid) checkAgainstCheckpoint(body, byChain, snapshot.heads, issues);
  const anchored = anchoring
    ? verifyAnchors(snapshot.checkpoints, byChain, snapshot.heads, publicKey, anchoring, issues)
    : undefined;
  const last = cp.valid[cp.valid.length - 1];
  for (const chain of chainIds) {
    const head = snapshot.heads.get(chain)?.sequence ?? 0;
    const covered = last?.heads.find((h) => h.chain === chain)?.sequence ?? 0;
    after += Math.max(0, head - covered);
  }

  const unique = dedupe(issues).sort(
    (a, b) => (a.chain ?? -1) - (b.chain ?? -1) || (a.sequence ?? 0) - (b.sequence ?? 0),
  );
  return {
    intact: unique.length === 0,
    chains: chainIds.size,
    entries: entryCount,
    checkpoints: snapshot.checkpoints.length,
    lastCheckpoint: last?.sequence,
    entriesAfterLastCheckpoint: after,
    anchors: anchoring?.anchors.length,
    lastAnchored: anchored?.last?.sequence,
    issues: unique,
  };
}

/** Checks one chain; returns its well-formed entries grouped by claimed sequence (for checkpoint checks). */
function verifyChain(
  chain: number,
  stored: readonly StoredAuditEntry[],
  head: { readonly sequence?: number; readonly hash?: string } | undefined,
  issues: AuditIssue[],
): Map<number, Entry[]> {
  const add: AddIssue = (kind, sequence, detail) => {
    issues.push({ kind, chain, sequence, detail });
  };
  const { bySequence, linkedHashes } = entriesBySequence(chain, stored, add);

  const headSeq = head?.sequence;
  const headOk = head !== undefined && Number.isSafeInteger(headSeq) && typeof head.hash === 'string';
  const maxClaimed = Math.max(0, ...bySequence.keys());
  if (!headOk && (stored.length > 0 || head !== undefined)) {
    add(
      'head-mismatch',
      undefined,
      head ? 'head item is malformed' : 'entries exist but the head item is missing',
    );
  }
  const last = headOk ? (headSeq as number) : maxClaimed;
  reportGaps(bySequence, last, add);
  reportLinks(bySequence, linkedHashes, last, headOk, add);

  if (headOk && last > 0) {
    const atHead = bySequence.get(last) ?? [];
    if (atHead.length > 0 && !atHead.some((e) => e.hash === head.hash)) {
      add('head-mismatch', last, 'the head item names a different hash than the entry at its sequence');
    }
  }
  return bySequence;
}

type AddIssue = (kind: AuditIssue['kind'], sequence: number | undefined, detail: string) => void;

/**
 * The chain's well-formed entries by the sequence they claim, and every hash an entry links to; items
 * that are no entry of this chain, or not where their sequence puts them, are reported.
 */
function entriesBySequence(
  chain: number,
  stored: readonly StoredAuditEntry[],
  add: AddIssue,
): { bySequence: Map<number, Entry[]>; linkedHashes: Set<string> } {
  const bySequence = new Map<number, Entry[]>();
  const linkedHashes = new Set<string>();
  for (const item of stored) {
    if (item.position === undefined || item.position < 1) {
      add('inserted', undefined, `item with sort key "${item.rawPosition}" is not an entry position`);
      continue;
    }
    const entry = wellFormed(item);
    if (!entry) {
      add('modified', item.position, 'malformed entry (missing or mistyped fields)');
      continue;
    }
    if (entry.chain !== chain) {
      add(
        'inserted',
        entry.position,
        `entry of chain ${entry.chain} (sequence ${entry.sequence}) stored here`,
      );
      continue;
    }
    if (!entry.contentOk) add('modified', entry.position, 'content does not match the entry hash');
    if (entry.sequence !== entry.position) {
      add(
        'reordered',
        entry.position,
        `position ${entry.position} holds the entry with sequence ${entry.sequence}`,
      );
    }
    const same = bySequence.get(entry.sequence) ?? [];
    same.push(entry);
    bySequence.set(entry.sequence, same);
    linkedHashes.add(entry.prevHash);
  }
  return { bySequence, linkedHashes };
}

/** Deleted: sequences up to the head that no entry claims (a long run reported in a bounded number of issues). */
function reportGaps(bySequence: ReadonlyMap<number, Entry[]>, last: number, add: AddIssue): void {
  let gapStart: number | undefined;
  const flushGap = (end: number): void => {
    if (gapStart === undefined) return;
    for (let s = gapStart; s <= end && s < gapStart + MAX_GAP_ISSUES; s++) add('deleted', s, 'entry missing');
    if (end - gapStart + 1 > MAX_GAP_ISSUES) {
      add('deleted', gapStart + MAX_GAP_ISSUES, `entries up to sequence ${end} missing as well`);
    }
    gapStart = undefined;
  };
  for (let s = 1; s <= last; s++) {
    if (bySequence.has(s)) flushGap(s - 1);
    else gapStart ??= s;
  }
  flushGap(last);
}

/** Entries beyond the head, a first entry not from genesis, and entries the chain does not link through. */
function reportLinks(
  bySequence: ReadonlyMap<number, Entry[]>,
  linkedHashes: ReadonlySet<string>,
  last: number,
  headOk: boolean,
  add: AddIssue,
): void {
  for (const [sequence, entries] of bySequence) {
    if (headOk && sequence > last) {
      for (const e of entries)
        add('inserted', e.position, `sequence ${sequence} is beyond the chain head (${last})`);
      continue;
    }
    const successors = bySequence.get(sequence + 1)?.filter((e) => e.contentOk) ?? [];
    const isLast = sequence === last;
    for (const e of entries) {
      if (sequence === 1 && e.contentOk && e.prevHash !== GENESIS_HASH) {
        add('broken-link', e.position, 'the first entry does not start from the genesis hash');
      }
      if (!e.contentOk || isLast || successors.length === 0 || linkedHashes.has(e.hash)) continue;
      // Someone claims to follow this sequence but links to a different hash.
      add(
        entries.length > 1 ? 'inserted' : 'modified',
        e.position,
        entries.length > 1
          ? `a second entry for sequence ${sequence} that the chain does not link through`
          : `replaced: entry ${sequence + 1} links to a different hash`,
      );
    }
  }
}

function wellFormed(item: StoredAuditEntry): Entry | undefined {
  const { entryChain, sequence, prevHash, events, timestamp, hash, position } = item;
  if (
    !Number.isSafeInteger(entryChain) ||
    !Number.isSafeInteger(sequence) ||
    (sequence as number) < 1 ||
    typeof prevHash !== 'string' ||
    !HEX64.test(prevHash) ||
    events === undefined ||
    events.length === 0 ||
    !Number.isSafeInteger(timestamp) ||
    typeof hash !== 'string' ||
    position === undefined
  ) {
    return undefined;
  }
  const chain = entryChain as number;
  const seq = sequence as number;
  const ts = timestamp as number;
  let contentOk: boolean;
  try {
    contentOk = entryHash(chain, seq, prevHash, merkleRoot(events), events.length, ts) === hash;
  } catch {
    contentOk = false;
  }
  return { chain, sequence: seq, prevHash, events, timestamp: ts, hash, position, contentOk };
}

/** Checks signatures and the checkpoint chain; returns the bodies whose signatures verified, in order. */
function verifyCheckpoints(
  stored: readonly StoredCheckpoint[],
  publicKey: KeyObject | CheckpointSignatureCheck | undefined,
  issues: AuditIssue[],
): { valid: CheckpointBody[] } {
  const add = (sequence: number | undefined, kind: AuditIssue['kind'], detail: string): void => {
    issues.push({ kind, sequence, detail: `checkpoint: ${detail}` });
  };
  const valid: CheckpointBody[] = [];
  const sorted = [...stored].sort((a, b) => (a.position ?? 0) - (b.position ?? 0));
  let prev: { position: number; hash: string } | undefined;
  for (const cp of sorted) {
    if (cp.position === undefined) {
      add(
        undefined,
        'checkpoint-chain',
        `item with sort key "${cp.rawPosition}" is not a checkpoint position`,
      );
      continue;
    }
    const body = cp.body === undefined ? undefined : parseCheckpointBody(cp.body);
    if (!body || !cp.body || !cp.signature) {
      add(cp.position, 'checkpoint-signature', 'malformed checkpoint');
      continue;
    }
    if (!publicKey) {
      add(cp.position, 'checkpoint-signature', 'no audit public key to verify the signature with');
    } else if (
      typeof publicKey === 'function'
        ? !publicKey(cp.body, cp.signature)
        : !verifyCheckpointSignature(cp.body, cp.signature, publicKey)
    ) {
      add(cp.position, 'checkpoint-signature', 'signature does not verify with the audit public key');
      continue;
    }
    if (body.sequence !== cp.position) {
      add(cp.position, 'checkpoint-chain', `position ${cp.position} holds checkpoint ${body.sequence}`);
    }
    const expectedPrev = prev && prev.position === cp.position - 1 ? prev.hash : undefined;
    if (cp.position === 1 && body.prevHash !== GENESIS_HASH) {
      add(cp.position, 'checkpoint-chain', 'the first checkpoint does not start from the genesis hash');
    } else if (cp.position > 1 && expectedPrev === undefined) {
      add(cp.position - 1, 'checkpoint-chain', `checkpoint ${cp.position - 1} missing`);
    } else if (expectedPrev !== undefined && body.prevHash !== expectedPrev) {
      add(cp.position, 'checkpoint-chain', `does not link to checkpoint ${cp.position - 1}`);
    }
    prev = { position: cp.position, hash: checkpointHashOf(cp.body) };
    if (publicKey) valid.push(body);
  }
  return { valid };
}

/**
 * Each head a valid checkpoint recorded must still be in its chain, unchanged. Against an anchor, a
 * missing tail is `truncated` and a replaced entry `rewound`; against a table checkpoint (which the same
 * attacker could have written), both are `checkpoint-mismatch`.
 */
function checkAgainstCheckpoint(
  body: CheckpointBody,
  byChain: ReadonlyMap<number, ReadonlyMap<number, Entry[]>>,
  heads: AuditLogSnapshot['heads'],
  issues: AuditIssue[],
  anchored = false,
): void {
  const name = `${anchored ? 'anchored ' : ''}checkpoint ${body.sequence}`;
  for (const recorded of body.heads) {
    if (recorded.sequence === 0) continue;
    const entries = byChain.get(recorded.chain)?.get(recorded.sequence) ?? [];
    const current = heads.get(recorded.chain)?.sequence ?? 0;
    const add = (kind: AuditIssue['kind'], detail: string): void => {
      issues.push({ kind, chain: recorded.chain, sequence: recorded.sequence, detail });
    };
    if (entries.length === 0) {
      if (current < recorded.sequence) {
        add(
          anchored ? 'truncated' : 'checkpoint-mismatch',
          `truncated: ${name} recorded the chain up to here, it now ends at ${current}`,
        );
      } else add(anchored ? 'deleted' : 'checkpoint-mismatch', `entry recorded by ${name} is missing`);
    } else if (!entries.some((e) => e.hash === recorded.hash && e.contentOk)) {
      add(
        anchored ? 'rewound' : 'checkpoint-mismatch',
        anchored
          ? `rewound: another entry stands where ${name} recorded the head (the head was moved back and written again, or this entry or one before it was rewritten)`
          : `differs from ${name} (this entry or one before it was rewritten)`,
      );
    }
  }
}

/** Checks the anchored checkpoints and the table against them; returns the last valid anchor. */
function verifyAnchors(
  tableCheckpoints: readonly StoredCheckpoint[],
  byChain: ReadonlyMap<number, ReadonlyMap<number, Entry[]>>,
  heads: AuditLogSnapshot['heads'],
  publicKey: KeyObject | CheckpointSignatureCheck | undefined,
  options: AnchorCheckOptions,
  issues: AuditIssue[],
): { last?: CheckpointBody } {
  const add: AddAnchorIssue = (sequence, kind, detail) => {
    issues.push({ kind, sequence, detail: `anchor: ${detail}` });
  };
  const checks = (body: string, signature: Buffer): boolean =>
    publicKey !== undefined &&
    (typeof publicKey === 'function'
      ? publicKey(body, signature)
      : verifyCheckpointSignature(body, signature, publicKey));

  const valid = validAnchors(options, checks, add);
  const sequences = [...valid.keys()].sort((a, b) => a - b);
  reportAnchorChain(valid, sequences, add);
  // The table's checkpoints against the anchors: the same text, and none left unanchored for long.
  reportTableAgainstAnchors(tableCheckpoints, valid, options, add);

  for (const sequence of sequences)
    checkAgainstCheckpoint(valid.get(sequence)!.body, byChain, heads, issues, true);

  const last = sequences.length > 0 ? valid.get(sequences[sequences.length - 1])!.body : undefined;
  reportUncovered(byChain, last, options, issues);
  return { last };
}

type AddAnchorIssue = (sequence: number | undefined, kind: AuditIssue['kind'], detail: string) => void;
type ValidAnchors = Map<number, { body: CheckpointBody; text: string }>;

/** The anchored checkpoints that are well formed and signed by the audit key, by sequence. */
function validAnchors(
  options: AnchorCheckOptions,
  checks: (body: string, signature: Buffer) => boolean,
  add: AddAnchorIssue,
): ValidAnchors {
  const valid: ValidAnchors = new Map();
  for (const anchor of options.anchors) {
    const body = anchor.body === undefined ? undefined : parseCheckpointBody(anchor.body);
    if (!body || !anchor.body || !anchor.signature || body.sequence !== anchor.position) {
      add(anchor.position, 'checkpoint-signature', `malformed anchored checkpoint "${anchor.rawPosition}"`);
    } else if (!checks(anchor.body, anchor.signature)) {
      add(anchor.position, 'checkpoint-signature', 'signature does not verify with the audit public key');
    } else {
      valid.set(body.sequence, { body, text: anchor.body });
    }
  }
  return valid;
}

/** The anchors as a chain: no sequence missing, each linking to the one before (else a fork). */
function reportAnchorChain(valid: ValidAnchors, sequences: readonly number[], add: AddAnchorIssue): void {
  let expected = 1;
  for (const sequence of sequences) {
    if (sequence > expected) {
      add(
        expected,
        'anchor-gap',
        sequence - 1 === expected
          ? `checkpoint ${expected} is not anchored`
          : `checkpoints ${expected} to ${sequence - 1} are not anchored`,
      );
    }
    const { body } = valid.get(sequence)!;
    const previous = valid.get(sequence - 1);
    if (
      sequence === 1
        ? body.prevHash !== GENESIS_HASH
        : previous && body.prevHash !== checkpointHashOf(previous.text)
    ) {
      add(
        sequence,
        'checkpoint-chain',
        `anchored checkpoint ${sequence} does not link to the one before (a fork)`,
      );
    }
    expected = sequence + 1;
  }
}

function reportTableAgainstAnchors(
  tableCheckpoints: readonly StoredCheckpoint[],
  valid: ValidAnchors,
  options: AnchorCheckOptions,
  add: AddAnchorIssue,
): void {
  const inTable = new Map<number, string | undefined>();
  for (const cp of tableCheckpoints) if (cp.position !== undefined) inTable.set(cp.position, cp.body);
  for (const [sequence, { text }] of valid) {
    if (!inTable.has(sequence)) {
      add(sequence, 'checkpoint-chain', `checkpoint ${sequence} is anchored but gone from the table`);
    } else if (inTable.get(sequence) !== text) {
      add(sequence, 'not-anchored', `checkpoint ${sequence} in the table differs from its anchor`);
    }
  }
  for (const [sequence, text] of inTable) {
    if (valid.has(sequence)) continue;
    const body = text === undefined ? undefined : parseCheckpointBody(text);
    if (!body || body.createdAt < options.now - options.maxLagMs) {
      add(sequence, 'not-anchored', `checkpoint ${sequence} of the table was never anchored`);
    }
  }
}

/** Coverage: entries older than the lag must be under an anchored head. */
function reportUncovered(
  byChain: ReadonlyMap<number, ReadonlyMap<number, Entry[]>>,
  last: CheckpointBody | undefined,
  options: AnchorCheckOptions,
  issues: AuditIssue[],
): void {
  for (const [chain, bySequence] of byChain) {
    const covered = last?.heads.find((h) => h.chain === chain)?.sequence ?? 0;
    const stale = [...bySequence.entries()]
      .filter(
        ([sequence, entries]) =>
          sequence > covered && entries.some((e) => e.timestamp < options.now - options.maxLagMs),
      )
      .map(([sequence]) => sequence)
      .sort((a, b) => a - b);
    if (stale.length > 0) {
      issues.push({
        kind: 'uncovered',
        chain,
        sequence: stale[0],
        detail:
          `entries ${stale[0]} to ${stale[stale.length - 1]} are older than ${Math.round(options.maxLagMs / 1000)} s ` +
          `and no anchored checkpoint covers them (the last covers this chain up to ${covered})`,
      });
    }
  }
}

/** One issue per (kind, chain, sequence): several checkpoints may report the same entry. */
function dedupe(issues: readonly AuditIssue[]): AuditIssue[] {
  const seen = new Map<string, AuditIssue>();
  for (const issue of issues) {
    const key = `${issue.kind}/${issue.chain ?? ''}/${issue.sequence ?? ''}`;
    if (!seen.has(key)) seen.set(key, issue);
  }
  return [...seen.values()];
}
