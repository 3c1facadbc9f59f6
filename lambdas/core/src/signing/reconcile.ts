/**
 * The reconciler's rules: what to do with a request that is still open (`received` or `signing`) long
 * after anything last happened to it. The queue normally guarantees progress, but a message can be lost
 * (a queue that loses an acknowledged message, a send that failed after the record was written) or
 * dead-lettered while an attempt still held the request. Without this, such a request would stay open
 * forever; with it, every accepted request reaches a terminal state:
 *
 *   quiet for staleAfterMs, requeued fewer than maxRequeues times  -> requeue (a fresh message; the
 *                                                                      signer is idempotent, so a message
 *                                                                      that was not lost only replays)
 *   quiet for staleAfterMs after maxRequeues requeues               -> abandon: `failed` DELIVERY_LOST
 *
 * "Quiet" counts from the latest of: received, the current attempt's lease end, the last requeue. A live
 * lease is never touched: its attempt may still finish.
 */
import type { RequestError, RequestStatus } from './sign-request';
import type { FailureCode } from '../shared/client-codes';

export interface ReconcileSettings {
  /** How long an open request may go without activity before it is requeued. */
  readonly staleAfterMs: number;
  /** Requeues before a request that still does not finish is failed. */
  readonly maxRequeues: number;
}

/** What the reconciler needs of an open request. */
export interface OpenRequest {
  readonly id: string;
  readonly status: RequestStatus;
  readonly receivedAt: number;
  readonly leaseUntil?: number;
  /** Times the reconciler sent a fresh message for it. */
  readonly requeues?: number;
  /** Epoch ms of the last requeue. */
  readonly requeuedAt?: number;
}

export type ReconcileDecision =
  | { readonly kind: 'leave'; readonly reason: 'terminal' | 'active' }
  | { readonly kind: 'requeue'; readonly requeues: number }
  | { readonly kind: 'abandon'; readonly error: RequestError };

/** Epoch ms of the last thing known to have happened to the request. */
export function lastActivityAt(request: OpenRequest): number {
  return Math.max(request.receivedAt, request.leaseUntil ?? 0, request.requeuedAt ?? 0);
}

export function decideReconcile(
  request: OpenRequest,
  nowMs: number,
  settings: ReconcileSettings,
): ReconcileDecision {
  if (request.status !== 'received' && request.status !== 'signing')
    return { kind: 'leave', reason: 'terminal' };
  if (nowMs - lastActivityAt(request) < settings.staleAfterMs) return { kind: 'leave', reason: 'active' };
  const requeues = request.requeues ?? 0;
  if (requeues < settings.maxRequeues) return { kind: 'requeue', requeues };
  return {
    kind: 'abandon',
    error: {
      code: 'DELIVERY_LOST' satisfies FailureCode,
      message: `not finished after ${requeues} requeues; no delivery reached it for ${Math.round(settings.staleAfterMs / 1000)} s`,
    },
  };
}

/** Counts of one reconciler run. */
export interface ReconcileSummary {
  /** Open requests older than the stale cutoff that were looked at. */
  readonly examined: number;
  readonly requeued: number;
  readonly abandoned: number;
  /** Requests that moved on (another writer won the conditional update) while the run looked at them. */
  readonly raced: number;
}

/** The request store as the reconciler sees it (implemented by the DynamoDB RequestRepository). */
export interface OpenRequestStore {
  /** Open requests received before `receivedBefore` (epoch ms), oldest first per shard, up to `limit`. */
  listOpen(receivedBefore: number, limit: number): Promise<readonly string[]>;
  getOpen(id: string): Promise<OpenRequest | undefined>;
  /** Counts a requeue if the request is still open with `requeues` as read; false when it moved on. */
  markRequeued(id: string, expectedRequeues: number, now: number): Promise<boolean>;
  /** Fails the request unless it is terminal or under a live lease; the failed record, or undefined. */
  abandon(id: string, error: RequestError, now: number): Promise<OpenRequest | undefined>;
}

export interface ReconcileDeps {
  readonly store: OpenRequestStore;
  /** Sends a fresh sign-request message for the id. */
  readonly enqueue: (id: string) => Promise<void>;
  readonly settings: ReconcileSettings;
  /** Most requests one run looks at (the next run carries on). */
  readonly limit: number;
  readonly clock?: () => number;
  /** Told of each requeue sent and each request failed. */
  readonly onAction?: (id: string, decision: Exclude<ReconcileDecision, { kind: 'leave' }>) => void;
}

/**
 * One reconciler run: every open request quiet for staleAfterMs is requeued or abandoned. Each action is
 * a conditional write first, so two runs (or a signer finishing meanwhile) never act twice on one state.
 */
export async function reconcileOpenRequests(deps: ReconcileDeps): Promise<ReconcileSummary> {
  const now = (deps.clock ?? Date.now)();
  const ids = await deps.store.listOpen(now - deps.settings.staleAfterMs, deps.limit);
  let requeued = 0;
  let abandoned = 0;
  let raced = 0;
  for (const id of ids) {
    const request = await deps.store.getOpen(id);
    if (!request) continue;
    const decision = decideReconcile(request, now, deps.settings);
    if (decision.kind === 'leave') continue;
    if (decision.kind === 'requeue') {
      // Counted first, so a lost race is never requeued twice. A failed send ends the run (the queue is
      // likely down); the request is requeued again by a later run, one requeue of its budget spent.
      if (!(await deps.store.markRequeued(id, decision.requeues, now))) {
        raced++;
        continue;
      }
      await deps.enqueue(id);
      requeued++;
    } else if (await deps.store.abandon(id, decision.error, now)) abandoned++;
    else {
      raced++;
      continue;
    }
    deps.onAction?.(id, decision);
  }
  return { examined: ids.length, requeued, abandoned, raced };
}
