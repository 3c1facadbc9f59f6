/**
 * Demand counted in memory and written to the hourly counters in bulk: one UpdateItem (ADD n) per key
 * type and hour bucket per flush instead of one per request. The forecast reads whole hours, so a few
 * seconds of delay cost nothing, while the request path loses a table write per request.
 *
 * A Lambda execution environment may be frozen between invocations, so a timer alone cannot be trusted
 * to flush: every `record` also flushes (and the caller awaits it, inside its invocation) once the oldest
 * pending count is older than `maxDelayMs` or `maxPending` requests are pending. The timer only covers an
 * idle environment that is not frozen (the local runner). At most `maxPending` samples, or those of
 * `maxDelayMs`, are lost if an environment is shut down with counts pending.
 */
import { bucketOf } from './demand-repository';
import type { KeyType } from '@pipeline/core/shared';

/** Where flushed counts go (the DemandRepository). */
export interface DemandSink {
  record(keyType: KeyType, at: number, count: number): Promise<void>;
}

export interface BufferedDemandOptions {
  /** Oldest pending count's age (ms) that makes the next `record` flush; 0 writes every request at once. */
  readonly maxDelayMs: number;
  /** Pending requests that make `record` flush. */
  readonly maxPending: number;
  /** Flush pending counts by timer after maxDelayMs even without a new request. Default true. */
  readonly timer?: boolean;
  /** Clock (epoch ms); injectable for tests. */
  readonly now?: () => number;
}

export class BufferedDemandRecorder {
  /** Pending counts per `<keyType>|<bucket>`. */
  private pending = new Map<string, { keyType: KeyType; bucket: number; count: number }>();
  private pendingTotal = 0;
  private oldestAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  public constructor(
    private readonly sink: DemandSink,
    private readonly options: BufferedDemandOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Counts one request; resolves at once unless a bound is reached, then after the flush. */
  public record(keyType: KeyType, at: number = this.now()): Promise<void> {
    this.add(keyType, bucketOf(at), 1);
    const now = this.now();
    this.oldestAt ??= now;
    if (this.pendingTotal >= this.options.maxPending || now - this.oldestAt >= this.options.maxDelayMs) {
      return this.flush();
    }
    if (this.options.timer !== false && !this.timer) {
      this.timer = setTimeout(() => void this.flush().catch(() => undefined), this.options.maxDelayMs);
      // Never keeps a process alive for a counter.
      this.timer.unref();
    }
    return Promise.resolve();
  }

  /** Requests counted and not yet written. */
  public pendingCount(): number {
    return this.pendingTotal;
  }

  /**
   * Writes every pending count (one ADD per key type and hour, in parallel). Counts whose write failed are
   * kept for the next flush, and the first failure is rethrown.
   */
  public async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    this.pendingTotal = 0;
    this.oldestAt = undefined;
    const results = await Promise.allSettled(
      batch.map((p) => this.sink.record(p.keyType, p.bucket, p.count)),
    );
    let failure: unknown;
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') return;
      failure ??= result.reason;
      this.add(batch[i].keyType, batch[i].bucket, batch[i].count);
      this.oldestAt ??= this.now();
    });
    if (failure !== undefined) throw failure;
  }

  private add(keyType: KeyType, bucket: number, count: number): void {
    const key = `${keyType}|${bucket}`;
    const entry = this.pending.get(key) ?? { keyType, bucket, count: 0 };
    entry.count += count;
    this.pending.set(key, entry);
    this.pendingTotal += count;
  }
}
