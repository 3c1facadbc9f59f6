/**
 * Reads request records for many waiting clients at once: `get` calls are answered on a shared clock
 * tick (every `tickMs` of wall time) by one strongly consistent BatchGetItem (up to 100 keys), not one
 * GetItem each. Long-polling clients of one API process, which poll at most once per tick, then cost the
 * table (and the process's CPU, which the SDK call dominates) at most 1000 / tickMs batch reads per
 * second, whatever their number.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { StoredSignRequest } from '@pipeline/core/signing';
import { batchGetConsistent } from './batch-get';

const BATCH_LIMIT = 100;

export interface BatchedRequestReaderOptions {
  readonly tableName: string;
  /** The shared tick (ms); default 25. */
  readonly tickMs?: number;
  /** Epoch ms; default Date.now. */
  readonly clock?: () => number;
  /** Runs fn after ms and returns a cancel; default setTimeout. */
  readonly timer?: (fn: () => void, ms: number) => () => void;
}

interface Waiter {
  resolve(record: StoredSignRequest | undefined): void;
  reject(error: unknown): void;
}

const defaultTimer = (fn: () => void, ms: number): (() => void) => {
  const handle = setTimeout(fn, ms);
  return () => clearTimeout(handle);
};

export class BatchedRequestReader {
  private readonly waiting = new Map<string, Waiter[]>();
  private scheduled = false;
  private readonly tickMs: number;
  private readonly clock: () => number;
  private readonly timer: (fn: () => void, ms: number) => () => void;

  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: BatchedRequestReaderOptions,
  ) {
    this.tickMs = options.tickMs ?? 25;
    this.clock = options.clock ?? Date.now;
    this.timer = options.timer ?? defaultTimer;
  }

  public get(id: string): Promise<StoredSignRequest | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(id) ?? [];
      waiters.push({ resolve, reject });
      this.waiting.set(id, waiters);
      if (!this.scheduled) this.schedule(this.tickMs - (this.clock() % this.tickMs));
    });
  }

  private schedule(ms: number): void {
    this.scheduled = true;
    this.timer(() => void this.flush(), ms);
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = new Map<string, Waiter[]>();
    for (const [id, waiters] of this.waiting) {
      if (batch.size === BATCH_LIMIT) break;
      batch.set(id, waiters);
      this.waiting.delete(id);
    }
    // More than one batch waiting: the rest goes out right away, in parallel.
    if (this.waiting.size > 0) this.schedule(0);
    try {
      const found = new Map<string, StoredSignRequest>();
      const items = await batchGetConsistent(
        this.doc,
        this.options.tableName,
        [...batch.keys()].map((id) => ({ id })),
      );
      for (const item of items) found.set(item.id as string, item as unknown as StoredSignRequest);
      for (const [id, waiters] of batch) for (const w of waiters) w.resolve(found.get(id));
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
    }
  }
}
