/**
 * The audit log service: appends events to hash chains and writes signed checkpoints.
 *
 * Appends are cheap on the request path: one conditional transaction per batch. The head of each chain
 * this process last wrote is cached, so the common case is a single round trip (no read); a lost race
 * (another process moved the head) re-reads the head and rebuilds the entries. Within one process the
 * appends to one chain are queued and written as one transaction per batch (group commit), so
 * concurrent callers never race each other and share round trips under load.
 */
import {
  AuditAppendConflictError,
  AuditCheckpointError,
  AuditNotReadyError,
  buildEntries,
  canonicalCheckpoint,
  chainOfEvent,
  checkpointBody,
  signCheckpoint,
  validateAuditEvent,
  type AuditEntry,
  type AuditEvent,
  type AuditReceipt,
  type AuditSink,
  type AuditStore,
  type ChainHead,
  type SignedCheckpoint,
} from '../../core/src';
import type { AuditLogOptions } from './types';

interface Pending {
  readonly events: readonly AuditEvent[];
  readonly resolve: (receipts: AuditReceipt[]) => void;
  readonly reject: (err: unknown) => void;
}

interface ChainState {
  readonly queue: Pending[];
  running: boolean;
  /** Head after this process's last successful write; a guess that a conditional write checks. */
  head?: ChainHead;
}

const DEFAULT_MAX_ATTEMPTS = 30;
const DEFAULT_MAX_BATCH = 25;
const CHECKPOINT_ATTEMPTS = 5;

export class AuditLog implements AuditSink {
  private readonly chainStates = new Map<number, ChainState>();
  private readonly clock: () => number;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly maxAttempts: number;
  private readonly maxBatch: number;
  private sinceCheckpoint = 0;
  private background: Promise<unknown> | undefined;

  public constructor(
    private readonly store: AuditStore,
    private readonly options: AuditLogOptions,
  ) {
    this.clock = options.clock ?? Date.now;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.maxBatch = Math.min(options.maxBatch ?? DEFAULT_MAX_BATCH, 99);
  }

  public async append(event: AuditEvent): Promise<AuditReceipt> {
    return (await this.appendMany([event]))[0];
  }

  /**
   * Appends events; events of one chain keep their order and are written in as few transactions as
   * possible. Everything is validated before anything is written. Receipts come back in input order.
   */
  public async appendMany(events: readonly AuditEvent[]): Promise<AuditReceipt[]> {
    events.forEach(validateAuditEvent);
    const groups = new Map<number, number[]>();
    events.forEach((event, i) => {
      const chain = chainOfEvent(event, this.options.chains);
      groups.set(chain, [...(groups.get(chain) ?? []), i]);
    });
    const receipts = new Array<AuditReceipt>(events.length);
    await Promise.all(
      [...groups].map(async ([chain, indexes]) => {
        for (let i = 0; i < indexes.length; i += this.maxBatch) {
          const part = indexes.slice(i, i + this.maxBatch);
          const written = await this.enqueue(
            chain,
            part.map((j) => events[j]),
          );
          part.forEach((j, k) => (receipts[j] = written[k]));
        }
      }),
    );
    this.countForCheckpoint(events.length);
    return receipts;
  }

  /** Signs and stores a checkpoint of every chain head now. */
  public async checkpoint(): Promise<SignedCheckpoint> {
    const signer = this.options.signer;
    if (!signer) throw new AuditNotReadyError('no audit signer configured: cannot write checkpoints');
    for (let attempt = 1; attempt <= CHECKPOINT_ATTEMPTS; attempt++) {
      const previous = await this.store.readCheckpointHead();
      const heads = await this.store.readHeads(this.options.chains);
      const body = checkpointBody({
        previous,
        heads,
        chains: this.options.chains,
        createdAt: this.clock(),
        signer,
      });
      const signed = await signCheckpoint(body, signer);
      if (await this.store.putCheckpoint(signed, canonicalCheckpoint(body))) return signed;
      await this.sleep(this.backoff(attempt));
    }
    throw new AuditCheckpointError(`checkpoint lost the race ${CHECKPOINT_ATTEMPTS} times`);
  }

  /** Waits for queued appends and a running automatic checkpoint (call before a process ends). */
  public async flush(): Promise<void> {
    while ([...this.chainStates.values()].some((s) => s.running) || this.background) {
      await Promise.all([this.background, this.sleep(1)]);
    }
  }

  private enqueue(chain: number, events: readonly AuditEvent[]): Promise<AuditReceipt[]> {
    let state = this.chainStates.get(chain);
    if (!state) {
      state = { queue: [], running: false };
      this.chainStates.set(chain, state);
    }
    const s = state;
    return new Promise<AuditReceipt[]>((resolve, reject) => {
      s.queue.push({ events, resolve, reject });
      if (!s.running) void this.drain(chain, s);
    });
  }

  /** Writes the queue of one chain, as many queued appends per transaction as fit in a batch. */
  private async drain(chain: number, state: ChainState): Promise<void> {
    state.running = true;
    try {
      while (state.queue.length > 0) {
        const batch: Pending[] = [state.queue.shift() as Pending];
        let size = batch[0].events.length;
        while (state.queue.length > 0 && size + state.queue[0].events.length <= this.maxBatch) {
          const next = state.queue.shift() as Pending;
          size += next.events.length;
          batch.push(next);
        }
        try {
          const entries = await this.write(
            chain,
            state,
            batch.flatMap((p) => p.events),
          );
          let offset = 0;
          for (const p of batch) {
            const mine = entries.slice(offset, offset + p.events.length);
            offset += p.events.length;
            p.resolve(mine.map((e) => ({ chain: e.chain, sequence: e.sequence, hash: e.hash })));
          }
        } catch (err) {
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      state.running = false;
    }
  }

  private async write(
    chain: number,
    state: ChainState,
    events: readonly AuditEvent[],
  ): Promise<AuditEntry[]> {
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const head = state.head ?? (await this.store.readHead(chain));
      const entries = buildEntries(head, events, this.clock());
      let written: boolean;
      try {
        written = await this.store.appendEntries(head, entries);
      } catch (err) {
        // Outcome unknown (the write may have landed): forget the cached head and let the caller decide.
        state.head = undefined;
        throw err;
      }
      if (written) {
        const last = entries[entries.length - 1];
        state.head = { chain, sequence: last.sequence, hash: last.hash };
        return entries;
      }
      state.head = undefined;
      if (attempt > 1) await this.sleep(this.backoff(attempt));
    }
    throw new AuditAppendConflictError(chain, this.maxAttempts);
  }

  /** Full jitter, capped at 50 ms: appenders on one chain spread out quickly. */
  private backoff(attempt: number): number {
    return Math.floor(this.random() * Math.min(50, 2 ** attempt));
  }

  private countForCheckpoint(count: number): void {
    const every = this.options.checkpointEvery ?? 0;
    if (every <= 0 || !this.options.signer) return;
    this.sinceCheckpoint += count;
    if (this.sinceCheckpoint < every || this.background) return;
    this.sinceCheckpoint = 0;
    this.background = this.checkpoint()
      .catch((err: unknown) => this.options.onBackgroundError?.(err))
      .finally(() => (this.background = undefined));
  }
}
