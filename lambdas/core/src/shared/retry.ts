/**
 * Bounded retries with full-jitter exponential backoff, for the steps of a request that are safe to
 * repeat: HSM operations on a key this attempt holds, and the CA call (the CA returns the stored
 * certificate when the same key asks again). Everything else fails the request or is left to SQS.
 *
 * A failure is transient when it says so (`transient: true`): the HSM port's busy and session errors,
 * the CA adapter's unavailable error (see shared/errors.ts).
 */
import { backoffDelay, sleep as realSleep } from './backoff';
import { isTransient } from './errors';

export interface RetryPolicy {
  /** Total attempts, first included (1 = no retry). */
  readonly attempts: number;
  /** Backoff cap of the first retry; doubles per retry up to maxDelayMs. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 3, baseDelayMs: 25, maxDelayMs: 400 };

export interface RetryDeps {
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
  /** Told of each failed attempt that will be retried (for logs and metrics). */
  readonly onRetry?: (err: unknown, attempt: number) => void;
}

/** Runs fn; a transient failure is retried until the policy's attempts are spent, then rethrown. */
export async function retryTransient<T>(
  fn: () => Promise<T>,
  policy: RetryPolicy,
  deps: RetryDeps = {},
): Promise<T> {
  const sleep = deps.sleep ?? realSleep;
  const random = deps.random ?? Math.random;
  const backoff = { baseMs: policy.baseDelayMs, maxMs: policy.maxDelayMs };
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= policy.attempts || !isTransient(err)) throw err;
      deps.onRetry?.(err, attempt);
      await sleep(backoffDelay(attempt, backoff, random));
    }
  }
}
