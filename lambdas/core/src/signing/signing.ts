/**
 * The signing core's entry: one delivery of a sign request, from its stored record to a terminal state,
 * as pure orchestration over ports (signing-deps.ts). A fresh request, or one whose lease ran out, gets an
 * attempt (attempt.ts); a finished one is replayed; one another attempt holds is busy.
 */
import { randomUUID } from 'node:crypto';
import { SigningAttempt } from './attempt';
import { decideDelivery, type StoredSignRequest } from './request-state';
import type { ProcessOptions, SignOutcome, SigningDeps } from './signing-deps';
import { RequestInProgressError, RequestNotFoundError } from './signing-errors';

/**
 * Processes one delivery of a sign request. Returns the terminal outcome (fresh or replayed); throws
 * RequestInProgressError when another attempt holds the request (retry later), KeyUnavailableError when
 * no key could be had yet under `fallback` (the lease is given up: retry later), RequestNotFoundError for
 * an unknown id, AttemptSupersededError when this attempt lost ownership, and store errors as they come
 * (the request then stays `signing` and a redelivery takes it over after the lease).
 */
export async function processSignRequest(
  deps: SigningDeps,
  requestId: string,
  options: ProcessOptions = {},
): Promise<SignOutcome> {
  const clock = deps.clock ?? Date.now;
  const newAttemptId = deps.newAttemptId ?? randomUUID;
  const start = (takeOverFrom?: { attemptId: string | undefined }) => {
    const now = clock();
    const attemptId = newAttemptId();
    return deps.requests
      .startAttempt(requestId, {
        attemptId,
        startedAt: now,
        leaseUntil: now + deps.settings.leaseMs,
        takeOverFrom,
      })
      .then((started) => (started ? { started, attemptId } : undefined));
  };
  // The common case first: a fresh request, started in one conditional write without a read.
  const fresh = await start();
  if (fresh) return new SigningAttempt(deps, fresh.started, fresh.attemptId, clock, options).run();
  for (let round = 0; round < 2; round++) {
    const record = await deps.requests.get(requestId);
    if (!record) throw new RequestNotFoundError(requestId);
    const decision = decideDelivery(record, clock());
    if (decision.kind === 'replay') return replay(record);
    if (decision.kind === 'busy') throw new RequestInProgressError(requestId, decision.retryAfterMs);
    const attempt = await start(
      decision.kind === 'takeover' ? { attemptId: decision.staleAttemptId } : undefined,
    );
    // Lost the race to another delivery: look once more (it may have finished already).
    if (attempt) return new SigningAttempt(deps, attempt.started, attempt.attemptId, clock, options).run();
  }
  throw new RequestInProgressError(requestId, deps.settings.leaseMs);
}

function replay(record: StoredSignRequest): SignOutcome {
  return record.status === 'signed'
    ? { status: 'signed', record, replayed: true }
    : { status: 'failed', record, replayed: true };
}
