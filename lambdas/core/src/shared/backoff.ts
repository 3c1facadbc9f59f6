/**
 * Full-jitter exponential backoff, the one formula of every retry loop here: the n-th retry waits a
 * uniformly random time below min(maxMs, baseMs * 2^(n - 1)). The jitter spreads retries of callers
 * that failed together (a contended item, a throttled table), so they do not collide again.
 */
export interface Backoff {
  /** Cap of the first retry's wait (ms); it doubles per retry. */
  readonly baseMs: number;
  /** Cap of any wait (ms). */
  readonly maxMs: number;
}

/** The wait before retry number `retry` (1 for the first retry), in whole milliseconds. */
export function backoffDelay(retry: number, backoff: Backoff, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(backoff.maxMs, backoff.baseMs * 2 ** (retry - 1)));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
