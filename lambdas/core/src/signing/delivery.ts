/**
 * One queue delivery of a sign request, around processSignRequest: what the signer does when a delivery
 * cannot finish. Any failure is rethrown (the message is redelivered, or dead-lettered after the last
 * delivery). The last delivery is special: it meets a live lease whose holder may have died, so it waits
 * for the lease (when its invocation has the time) and takes over once; and if it still cannot finish, it
 * ends the request `failed` with DELIVERY_EXHAUSTED, so the client sees a terminal answer instead of
 * waiting forever (the store refuses while a live attempt owns the request).
 *
 * A delivery before the last that meets a live lease (its holder may have died with its process) does not
 * spend the queue's receives on it: it holds the message invisible until the lease ends (`hold`: the
 * queue's visibility change), so the next delivery is the one that takes over. One that found no key yet
 * (KeyUnavailableError) holds it for the retry hint, waiting for keygen or a free generation.
 */
import type { RequestError } from './sign-request';
import type { SignOutcome } from './signing-deps';
import { KeyUnavailableError, RequestInProgressError } from './signing-errors';
import type { FailureCode } from '../shared/client-codes';

export interface Delivery {
  readonly requestId: string;
  /** How many times the queue has delivered this message (1 the first time). */
  readonly receiveCount: number;
  /** Deliveries before the queue dead-letters the message. */
  readonly maxReceiveCount: number;
  /** Time left in the invocation (ms). */
  readonly remainingTimeMs: () => number;
  /**
   * Keeps the message from being delivered again for `ms` (rounded up to seconds by the queue); without
   * it a busy request comes back after the queue's visibility timeout.
   */
  readonly hold?: (ms: number) => Promise<void>;
}

/** Added to the lease's remaining time when a message is held for it: the takeover finds it expired. */
const HOLD_MARGIN_MS = 1000;

export interface DeliveryDeps {
  /** lastDelivery: the queue will not deliver the message again (see ProcessOptions). */
  readonly process: (
    requestId: string,
    options: { lastDelivery: boolean; lastChanceWaitMs?: number },
  ) => Promise<SignOutcome>;
  /** Ends a request that no attempt owns: `failed` with the error (see RequestRepository.abandon). */
  readonly abandon: (requestId: string, error: RequestError, nowMs: number) => Promise<unknown>;
  /** Told of the failure before it is rethrown (for logs). */
  readonly onUnfinished?: (err: unknown) => void;
  /** Time the takeover keeps in reserve for the attempt itself; default 20 s. */
  readonly marginMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly clock?: () => number;
}

export async function deliverSignRequest(delivery: Delivery, deps: DeliveryDeps): Promise<SignOutcome> {
  const last = delivery.receiveCount >= delivery.maxReceiveCount;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const margin = deps.marginMs ?? 20_000;
  // The last delivery may wait for a key generation with the invocation's time, less the attempt's own.
  const processOptions = () => ({
    lastDelivery: last,
    ...(last ? { lastChanceWaitMs: Math.max(0, delivery.remainingTimeMs() - margin) } : {}),
  });
  try {
    try {
      return await deps.process(delivery.requestId, processOptions());
    } catch (err) {
      const waitable =
        last &&
        err instanceof RequestInProgressError &&
        err.retryAfterMs + margin < delivery.remainingTimeMs();
      if (!waitable) {
        const retryLater = err instanceof RequestInProgressError || err instanceof KeyUnavailableError;
        if (!last && retryLater && delivery.hold) {
          // Best effort: without the hold the message comes back after the visibility timeout anyway.
          await delivery.hold(err.retryAfterMs + HOLD_MARGIN_MS).catch(() => undefined);
        }
        throw err;
      }
      await sleep(err.retryAfterMs + 100);
      return await deps.process(delivery.requestId, processOptions());
    }
  } catch (err) {
    deps.onUnfinished?.(err);
    if (last) {
      const name = err instanceof Error ? err.name : 'Error';
      const error = {
        code: 'DELIVERY_EXHAUSTED' satisfies FailureCode,
        message: `not finished after ${delivery.receiveCount} deliveries (${name})`,
      };
      await deps.abandon(delivery.requestId, error, (deps.clock ?? Date.now)()).catch(() => undefined);
    }
    throw err;
  }
}
