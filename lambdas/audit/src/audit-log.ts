/**
 * The audit log service: appends batches of events as Merkle-tree entries to hash chains, hands out a
 * receipt (inclusion proof) per event, and writes signed checkpoints.
 *
 * Appends are cheap on the request path: appends queued while a write is under way (concurrent callers
 * in this process) are committed together as ONE entry, in one conditional transaction of two items (the
 * entry and the chain head), whatever their number. The head this process last wrote is cached, so the
 * common case is a single round trip; a lost race (another process moved the head) re-reads a head and
 * rebuilds the entry. Each instance writes to one chain of its own choosing, so writers in different
 * processes rarely meet on a head.
 *
 * With the audit key (a signer), each entry is also signed as its chain's new head before its receipts are
 * handed out, and checkpoints (every head at once, linked) are signed, stored and copied to the anchor
 * store outside the table.
 */
import {
  AuditAppendConflictError,
  AuditCheckpointError,
  AuditHeadsRewoundError,
  AuditNotReadyError,
  buildEntry,
  canonicalCheckpoint,
  checkpointBody,
  parseCheckpointBody,
  receiptsOf,
  signCheckpoint,
  signHead,
  validateAuditEvent,
  type AuditEntry,
  type AuditEvent,
  type AuditReceipt,
  type AuditSink,
  type AuditStore,
  type CarriedWrites,
  type CarryingAppendOutcome,
  type CarryingAuditSink,
  type ChainHead,
  type SignatureLog,
  type SignedCheckpoint,
  type SignedHead,
} from '@pipeline/core/audit';
import { backoffDelay, sleep } from '@pipeline/core/shared';
import type { AuditLogOptions } from './types';

const APPEND_BACKOFF = { baseMs: 2, maxMs: 50 };

interface Pending {
  readonly events: readonly AuditEvent[];
  /** Other writes committed with these events alone, in an entry of their own (appendCarrying). */
  readonly carried?: CarriedWrites;
  readonly resolve: (outcome: CarryingAppendOutcome) => void;
  readonly reject: (err: unknown) => void;
}

/** What a write of one entry ended with. */
type Written =
  { readonly entry: AuditEntry; readonly signed?: SignedHead } | { readonly refused: readonly boolean[] };

const DEFAULT_MAX_ATTEMPTS = 30;
/** Events per entry: ~250 bytes each keeps an entry far below DynamoDB's 400 KB item limit. */
const DEFAULT_MAX_BATCH = 500;
const CHECKPOINT_ATTEMPTS = 5;

export class AuditLog implements AuditSink, CarryingAuditSink, SignatureLog {
  private readonly queue: Pending[] = [];
  private running = false;
  /** The chain this instance appends to; moves after a lost race. */
  private chain: number;
  /** Head after this process's last successful write; a guess that a conditional write checks. */
  private head: ChainHead | undefined;
  private readonly clock: () => number;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly maxAttempts: number;
  private readonly maxBatch: number;

  public constructor(
    private readonly store: AuditStore,
    private readonly options: AuditLogOptions,
  ) {
    this.clock = options.clock ?? Date.now;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? sleep;
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.maxBatch = Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH);
    this.chain = options.chain ?? this.randomChain();
  }

  public async append(event: AuditEvent): Promise<AuditReceipt> {
    return (await this.appendMany([event]))[0];
  }

  /**
   * Appends events, in order, to the next entry this process commits (with whatever else is queued).
   * Everything is validated before anything is written. Receipts come back in input order.
   */
  public async appendMany(events: readonly AuditEvent[]): Promise<AuditReceipt[]> {
    if (events.length === 0) return [];
    events.forEach(validateAuditEvent);
    const receipts: AuditReceipt[] = [];
    // More events than one entry holds (a large keygen batch): several entries, in order.
    for (let i = 0; i < events.length; i += this.maxBatch) {
      receipts.push(...(await this.enqueue(events.slice(i, i + this.maxBatch))));
    }
    return receipts;
  }

  /**
   * Appends events in an entry of their own, written in one transaction with `carried` (writes of
   * another table, in groups; the store knows their form), all or nothing. Sequenced with the other
   * appends of this process; the cached head moves only when the transaction committed. A carried
   * write's refused condition ends it with `written: false` and which groups were refused: no entry, no
   * receipt (its head, signed before the write, is never handed out). At most maxBatch events.
   */
  public async appendCarrying(
    events: readonly AuditEvent[],
    carried: CarriedWrites,
  ): Promise<CarryingAppendOutcome> {
    if (!this.store.appendEntriesCarrying) {
      throw new AuditNotReadyError('the audit store cannot carry other writes in its transactions');
    }
    if (events.length === 0 || events.length > this.maxBatch) {
      throw new RangeError(`a carrying append takes 1 to ${this.maxBatch} events`);
    }
    events.forEach(validateAuditEvent);
    return new Promise<CarryingAppendOutcome>((resolve, reject) => {
      this.queue.push({ events, carried, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  /**
   * Whether a `signature.made` for the request, or with the key, is in any chain's entries written since
   * `since`. Reads every chain back to that time: for the CA's rare replacement decision only. Throws
   * AuditNotReadyError when the store cannot read entries back (no evidence: no replacement).
   */
  public async signatureMade(query: {
    readonly requestId: string;
    readonly keySpkiHash: string;
    readonly since: number;
  }): Promise<boolean> {
    const read = this.store.readEntriesSince?.bind(this.store);
    if (!read) throw new AuditNotReadyError('the audit store cannot read entries back');
    const chains = await Promise.all(
      Array.from({ length: this.options.chains }, (_, chain) => read(chain, query.since)),
    );
    return chains.some((entries) =>
      entries.some((entry) =>
        entry.events.some((text) => {
          // The event's own fields decide, not a substring: a hash could appear in another event. An
          // event that does not parse proves nothing absent: it counts as a signature.
          let event: AuditEvent;
          try {
            event = JSON.parse(text) as AuditEvent;
          } catch {
            return true;
          }
          return (
            event.type === 'signature.made' &&
            (event.requestId === query.requestId || event.keySpkiHash === query.keySpkiHash)
          );
        }),
      ),
    );
  }

  /**
   * Signs and stores a checkpoint of every chain head now, then anchors it (and, first, any stored
   * checkpoint not yet anchored).
   */
  public async checkpoint(): Promise<SignedCheckpoint> {
    return (await this.writeCheckpoint(false))!;
  }

  /** As checkpoint(), but writes nothing when no head moved since the last checkpoint. */
  public async checkpointIfMoved(): Promise<SignedCheckpoint | undefined> {
    return this.writeCheckpoint(true);
  }

  private async writeCheckpoint(ifMoved: boolean): Promise<SignedCheckpoint | undefined> {
    const signer = this.options.signer;
    if (!signer) throw new AuditNotReadyError('no audit signer configured: cannot write checkpoints');
    await this.anchorPending();
    for (let attempt = 1; attempt <= CHECKPOINT_ATTEMPTS; attempt++) {
      const previous = await this.store.readCheckpointHead();
      const heads = await this.store.readHeads(this.options.chains);
      if (previous) {
        const recorded = await this.recordedHeads(previous.sequence);
        // Nothing is signed over heads that moved backwards: that would vouch for a rewritten chain.
        const rewound = await this.rewoundChains(recorded, heads);
        if (rewound.length > 0) throw new AuditHeadsRewoundError(rewound, previous.sequence);
        if (ifMoved && unchanged(recorded, heads)) return undefined;
      }
      const body = checkpointBody({
        previous,
        heads,
        chains: this.options.chains,
        createdAt: this.clock(),
        signer,
      });
      const signed = await signCheckpoint(body, signer);
      const text = canonicalCheckpoint(body);
      if (await this.store.putCheckpoint(signed, text)) {
        await this.anchor({
          sequence: body.sequence,
          body: text,
          signature: signed.signature,
          hash: signed.hash,
        });
        return signed;
      }
      await this.sleep(this.backoff(attempt));
    }
    throw new AuditCheckpointError(`checkpoint lost the race ${CHECKPOINT_ATTEMPTS} times`);
  }

  /** Waits for queued appends (call before a process ends). */
  public async flush(): Promise<void> {
    while (this.running) await this.sleep(1);
  }

  /**
   * Anchors the stored checkpoints the anchor store lacks (a write that failed after the table's): walks
   * back from the newest until it finds one anchored, then anchors forward. Returns how many it wrote.
   */
  public async anchorPending(maxBack = 1000): Promise<number> {
    const anchors = this.options.anchors;
    if (!anchors) return 0;
    const head = await this.store.readCheckpointHead();
    const missing: number[] = [];
    for (let s = head?.sequence ?? 0; s >= 1 && missing.length < maxBack && !(await anchors.has(s)); s--) {
      missing.unshift(s);
    }
    for (const sequence of missing) {
      const stored = await this.store.readCheckpoint(sequence);
      if (stored) await this.anchor(stored);
    }
    return missing.length;
  }

  private async anchor(
    checkpoint: Parameters<NonNullable<AuditLogOptions['anchors']>['put']>[0],
  ): Promise<void> {
    const anchors = this.options.anchors;
    if (anchors && !(await anchors.put(checkpoint))) {
      throw new AuditCheckpointError(
        `a different checkpoint ${checkpoint.sequence} is already anchored in ${anchors.location}: the log forked`,
      );
    }
  }

  /** The heads the stored checkpoint recorded; a checkpoint gone or malformed is refused. */
  private async recordedHeads(sequence: number): Promise<ReadonlyMap<number, ChainHead>> {
    const stored = await this.store.readCheckpoint(sequence);
    const body = stored && parseCheckpointBody(stored.body);
    if (!body) throw new AuditCheckpointError(`checkpoint ${sequence} is missing or malformed in the table`);
    return new Map(body.heads.map((h) => [h.chain, h]));
  }

  /**
   * The chains whose head is no longer a successor of the recorded one: set back to an earlier sequence,
   * another hash at the recorded sequence, or (moved on) another entry where the recorded head stood.
   */
  private async rewoundChains(
    recorded: ReadonlyMap<number, ChainHead>,
    heads: readonly ChainHead[],
  ): Promise<number[]> {
    const current = new Map(heads.map((h) => [h.chain, h]));
    const rewound: number[] = [];
    for (const r of recorded.values()) {
      if (r.sequence === 0) continue;
      const h = current.get(r.chain);
      const back =
        !h ||
        h.sequence < r.sequence ||
        (h.sequence === r.sequence && h.hash !== r.hash) ||
        (h.sequence > r.sequence && (await this.store.readEntryHash(r.chain, r.sequence)) !== r.hash);
      if (back) rewound.push(r.chain);
    }
    return rewound.sort((a, b) => a - b);
  }

  private enqueue(events: readonly AuditEvent[]): Promise<AuditReceipt[]> {
    return new Promise<AuditReceipt[]>((resolve, reject) => {
      this.queue.push({
        events,
        // A plain append is never refused: only carried writes have conditions of their own.
        resolve: (outcome) => resolve(outcome.written ? [...outcome.receipts] : []),
        reject,
      });
      if (!this.running) void this.drain();
    });
  }

  /**
   * Commits the queue, as many queued appends per entry as fit; an append that carries other writes is
   * committed alone (its transaction stands or falls with them).
   */
  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch: Pending[] = [this.queue.shift() as Pending];
        let size = batch[0].events.length;
        while (
          !batch[0].carried &&
          this.queue.length > 0 &&
          !this.queue[0].carried &&
          size + this.queue[0].events.length <= this.maxBatch
        ) {
          const next = this.queue.shift() as Pending;
          size += next.events.length;
          batch.push(next);
        }
        try {
          const written = await this.write(
            batch.flatMap((p) => p.events),
            batch[0].carried,
          );
          if ('refused' in written) {
            batch[0].resolve({ written: false, refused: written.refused });
            continue;
          }
          const { entry, signed } = written;
          const receipts = receiptsOf(entry).map((r) => (signed ? { ...r, head: signed } : r));
          let offset = 0;
          for (const p of batch) {
            p.resolve({ written: true, receipts: receipts.slice(offset, offset + p.events.length) });
            offset += p.events.length;
          }
        } catch (err) {
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private async signHead(entry: AuditEntry): Promise<SignedHead | undefined> {
    const signer = this.options.signer;
    if (!signer || this.options.signHeads === false) return undefined;
    return signHead({ chain: entry.chain, sequence: entry.sequence, hash: entry.hash }, signer);
  }

  private async write(events: readonly AuditEvent[], carried?: CarriedWrites): Promise<Written> {
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const head = this.head ?? (await this.store.readHead(this.chain));
      const entry = buildEntry(head, events, this.clock());
      // Signed before the write, so a receipt never waits for a second round trip; a lost race wastes it.
      const signed = await this.signHead(entry);
      let written: boolean;
      try {
        if (carried) {
          const result = await this.store.appendEntriesCarrying!(head, [entry], carried);
          // Nothing written: the head stays where it was (a stale guess is caught by the next write).
          if (result.outcome === 'refused') return { refused: result.refused };
          written = result.outcome === 'written';
        } else written = await this.store.appendEntries(head, [entry]);
      } catch (err) {
        // Outcome unknown (the write may have landed): forget the cached head and let the caller decide.
        this.head = undefined;
        throw err;
      }
      if (written) {
        this.head = { chain: entry.chain, sequence: entry.sequence, hash: entry.hash };
        return { entry, signed };
      }
      // Another process appends here too: try another chain (its head is read fresh).
      this.head = undefined;
      if (this.options.chain === undefined) this.chain = this.randomChain();
      if (attempt > 1) await this.sleep(this.backoff(attempt));
    }
    throw new AuditAppendConflictError(this.chain, this.maxAttempts);
  }

  private randomChain(): number {
    return Math.floor(this.random() * this.options.chains) % this.options.chains;
  }

  /** Capped at 50 ms: appenders on one chain spread out quickly. */
  private backoff(attempt: number): number {
    return backoffDelay(attempt, APPEND_BACKOFF, this.random);
  }
}

/** True when the heads are those the checkpoint recorded (a chain it did not record is still empty). */
function unchanged(recorded: ReadonlyMap<number, ChainHead>, heads: readonly ChainHead[]): boolean {
  return heads.every(
    (h) => recorded.get(h.chain)?.hash === h.hash || (h.sequence === 0 && !recorded.has(h.chain)),
  );
}
