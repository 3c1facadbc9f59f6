/**
 * Bounded retries with full-jitter exponential backoff, for the steps of a request that are safe to
 * repeat: HSM operations on a key this attempt holds, and the CA call (the CA returns the stored
 * certificate when the same key asks again). Everything else fails the request or is left to SQS.
 *
 * Transient failures are recognised by name or code only, so the core needs no adapter classes.
 */
import { backoffDelay, sleep as realSleep } from './backoff';

export interface RetryPolicy {
  /** Total attempts, first included (1 = no retry). */
  readonly attempts: number;
  /** Backoff cap of the first retry; doubles per retry up to maxDelayMs. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 3, baseDelayMs: 25, maxDelayMs: 400 };

/**
 * Error names and codes that mean "try again shortly": capacity, lost sessions, an unreachable CA; and
 * any error that says so itself (`transient: true`).
 */
const TRANSIENT_NAMES = new Set(['HsmBusyError', 'HsmSessionError', 'CertificateAuthorityUnavailableError']);
const TRANSIENT_CODES = new Set(['CA_UNAVAILABLE']);

export function isTransient(err: unknown): boolean {
  const e = err as { name?: unknown; code?: unknown; transient?: unknown } | undefined;
  return (
    e?.transient === true ||
    (typeof e?.name === 'string' && TRANSIENT_NAMES.has(e.name)) ||
    (typeof e?.code === 'string' && TRANSIENT_CODES.has(e.code))
  );
}

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
