/**
 * The pipeline's intake, typed, as every door calls it: `submit` a sign request for a client (validated,
 * admitted, its identity assertion verified and claimed, stored and queued, optionally waited for) and
 * `read` one of the client's requests. Refusals are returned with their client code (clientFailureOf),
 * never thrown; only a failure the service's mapping calls internal is thrown. Each door authenticates its client and
 * renders the outcome in its protocol's shape (the API: HTTP and `{ error: { code, message } }`).
 */
import { requestWeight } from '@pipeline/core/pool';
import { credentialDigest, signMessageHash, type CredentialUse } from '@pipeline/core/identity';
import { clientFailureOf, type ClientFailure } from '@pipeline/core/shared';
import { isTerminal, requestExpiresAt, type SignRequestRecord } from '@pipeline/core/signing';
import {
  ApiError,
  ConflictError,
  DependencyError,
  NotFoundError,
  ThrottledError,
  ValidationError,
} from './errors';
import { identify, inputHash } from './identify';
import type { Admission, ApiDeps, SignRequestInput } from './types';
import { isRequestId, parseSignRequest } from './validate';
import { parseTaskSubmission, type TaskSubmission } from './task-request';
import { toView, type SignRequestView } from './view';
import { waitUntilTerminal } from './waiting';

/** The longest wait for a request's end a caller may ask for (seconds). */
export const MAX_WAIT_SECONDS = 20;

export interface SubmitCall {
  /** The client, as its door authenticated it (the API: its principal; CSC: `csc:<clientId>`). */
  readonly clientId: string;
  /**
   * The sign request as the API's wire format has it (docs/api.md), validated here; or a DSS-Ext door's
   * sign tasks with their evidence (task-request.ts), which the wire format does not offer.
   */
  readonly request: unknown;
  readonly tasks?: TaskSubmission;
  /** How long to wait for the request's end, 0 to MAX_WAIT_SECONDS (0: answer at acceptance). */
  readonly waitSeconds: number;
  /** The login approved the digests in any format (SignRequestInput.formatOpen): the door's word. */
  readonly formatOpen?: boolean;
  /**
   * The request creates a one-time credential (its digest must be the credentialDigest; nothing is signed,
   * a key is certified and kept wrapped), or signs with one the same client created.
   */
  readonly credential?: CredentialUse;
}

export interface ReadCall {
  readonly clientId: string;
  readonly id: string;
  readonly waitSeconds: number;
}

/**
 * A refusal: the service's one mapping of the failure (clientFailureOf: a client code of the registry, its
 * status, a message for the caller) and the headers of its answer (a throttle's Retry-After).
 */
export interface Refused {
  readonly kind: 'refused';
  readonly error: ClientFailure;
  readonly headers: Readonly<Record<string, string>>;
}

/** A request the pipeline took and that has not ended within the wait (`fresh`: this call created it). */
export interface Accepted {
  readonly kind: 'accepted';
  readonly id: string;
  readonly status: SignRequestRecord['status'];
  readonly fresh: boolean;
}

/** The request as it stands (ended, or at the wait's end), as GET answers it. */
export interface Result {
  readonly kind: 'result';
  readonly request: SignRequestView;
}

export type SubmitOutcome = Accepted | Result | Refused;
export type ReadOutcome = Result | Refused;

/** Submits a sign request: accepted (or, with a wait, its result), or refused with a client code. */
export async function submit(deps: ApiDeps, call: SubmitCall): Promise<SubmitOutcome> {
  try {
    const parsed = call.tasks ? parseTaskSubmission(call.tasks) : parseSignRequest(call.request);
    const input = credentialChecked({
      ...parsed,
      ...(call.formatOpen ? { formatOpen: true } : {}),
      ...(call.credential ? { credential: call.credential } : {}),
    });
    // Checked before anything is spent: a bad wait costs neither admission nor the assertion's single use.
    const wait = checkedWait(call.waitSeconds);
    const deadline = (deps.now ?? Date.now)() + wait * 1000;
    const { record, fresh } = await admitAndCreate(deps, input, call.clientId);
    // Without wait, the acceptance; with wait, the request once it ended (a resend: whatever its state at
    // the deadline), else the acceptance.
    if (wait === 0) return accepted(record, fresh);
    const latest = await waitUntilTerminal(record, deps, deadline);
    if (fresh && !isTerminal(latest.status)) return accepted(latest, fresh);
    return { kind: 'result', request: toView(latest) };
  } catch (err) {
    return refusedOrThrow(err);
  }
}

/** Reads one of the client's requests (another client's is not found, like a missing one). */
export async function read(deps: ApiDeps, call: ReadCall): Promise<ReadOutcome> {
  try {
    const id = call.id.toLowerCase();
    if (!isRequestId(id)) throw new ValidationError('id must be a UUID');
    const wait = checkedWait(call.waitSeconds);
    const deadline = (deps.now ?? Date.now)() + wait * 1000;
    const record = await deps.requests.get(id);
    // Another client's request is reported exactly like a missing one: ids leak nothing.
    if (!record || record.clientId !== call.clientId) throw new NotFoundError();
    return { kind: 'result', request: toView(await waitUntilTerminal(record, deps, deadline)) };
  } catch (err) {
    return refusedOrThrow(err);
  }
}

/** A failure as a refusal the door answers; one the mapping calls internal is thrown (the door reports it). */
function refusedOrThrow(err: unknown): Refused {
  const error = clientFailureOf(err);
  if (error.kind === 'internal') throw err;
  return { kind: 'refused', error, headers: err instanceof ApiError ? err.headers : {} };
}

function accepted(record: SignRequestRecord, fresh: boolean): Accepted {
  return { kind: 'accepted', id: record.id, status: record.status, fresh };
}

/**
 * A credential's creation signs nothing: one raw SHA-256 "digest", the credentialDigest of its request id,
 * key type and algorithm (what the login approves), no documents. A use names the creating request id.
 * The pipeline and the CA check the rest (the creating request's client, key and certificate).
 */
function credentialChecked(input: SignRequestInput): SignRequestInput {
  const { credential } = input;
  if (!credential) return input;
  if ('use' in credential) {
    if (!isRequestId(credential.use)) throw new ValidationError('credential must name a request id');
    return input;
  }
  const digest = credentialDigest({
    requestId: input.requestId,
    keyType: input.keyType,
    signatureAlgorithm: input.signatureAlgorithm,
    credential: 'create',
  });
  if (
    input.documents !== undefined ||
    (input.format ?? 'raw') !== 'raw' ||
    input.digestAlgorithm !== 'SHA-256' ||
    input.digest !== digest
  ) {
    throw new ValidationError('a credential creation has one raw SHA-256 digest: its credentialDigest');
  }
  return input;
}

function checkedWait(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS) {
    throw new ValidationError(`wait must be an integer from 0 to ${MAX_WAIT_SECONDS}`);
  }
  return seconds;
}

/** Admission, then creation; an admitted request that is not created after all gives its place back. */
async function admitAndCreate(deps: ApiDeps, input: SignRequestInput, clientId: string): Promise<Created> {
  const admitted = deps.admission ? await admit(input, clientId, deps.admission, deps) : undefined;
  try {
    const created = await create(deps, input, clientId);
    // Counted by the admission only while it is a new open request.
    if (!created.fresh) admitted?.();
    return created;
  } catch (err) {
    admitted?.();
    throw err;
  }
}

/** The stored request and whether this call created it (false: a resend of the same request). */
interface Created {
  readonly record: SignRequestRecord;
  readonly fresh: boolean;
}

/**
 * Admission by key supply and the client's share, before anything else: a refusal costs neither a
 * signature check nor the assertion's single use. A resend of one of this client's request ids goes on
 * (answered as always: 200 for the same request, 409 for another). Returns the admission's cancel, for a
 * request that is not accepted after all.
 */
async function admit(
  input: SignRequestInput,
  clientId: string,
  admission: Admission,
  deps: ApiDeps,
): Promise<(() => void) | undefined> {
  const { decision, cancel } = await admission.decide(input.keyType, clientId, weightOf(input));
  if (decision.kind === 'accept') return cancel;
  const existing = await deps.requests.get(input.requestId);
  if (existing && existing.clientId === clientId) return undefined;
  throw new ThrottledError(decision.code, decision.message, deps.settings.retryAfterSeconds);
}

async function create(deps: ApiDeps, input: SignRequestInput, clientId: string): Promise<Created> {
  const now = (deps.now ?? Date.now)();
  const { signer, identity } = await identify(input, clientId, deps);

  const id = input.requestId;
  if (!deps.admission && deps.settings.rejectWhenPoolEmpty) {
    const available = (await deps.pool.available())[input.keyType] ?? 0;
    if (available <= 0) {
      throw new ThrottledError(
        'POOL_EMPTY',
        `no ${input.keyType} key is available, retry later`,
        deps.settings.retryAfterSeconds,
      );
    }
  }

  const record: SignRequestRecord = {
    id,
    clientId,
    status: 'received',
    digest: input.digest,
    digestAlgorithm: input.digestAlgorithm,
    keyType: input.keyType,
    signatureAlgorithm: input.signatureAlgorithm,
    ...(input.format ? { format: input.format } : {}),
    ...(input.documents ? { documents: input.documents } : {}),
    ...(input.profile ? { profile: input.profile } : {}),
    ...(input.level ? { level: input.level, minimumLevel: input.minimumLevel } : {}),
    ...(input.formatOpen ? { formatOpen: true } : {}),
    ...(input.credential ? { credential: input.credential } : {}),
    // The hash of the message the citizen approved; the e-service's own message (the CA composes it again).
    ...(input.signMessage && input.approvedMessage
      ? { signMessageHash: signMessageHash(input.approvedMessage), signMessage: input.signMessage }
      : {}),
    signer,
    identity,
    identityAssertion: input.identityAssertion,
    inputHash: inputHash(clientId, input, signer, identity),
    // Counted as what it costs by every API process's admission while it is open.
    ...(weightOf(input) > 1 ? { admissionWeight: weightOf(input) } : {}),
    receivedAt: now,
    expiresAt: requestExpiresAt(now, deps.settings.retentionSeconds),
  };

  // The CA records the request id as this client's before anything is stored: a revocation of the
  // request is checked against that, not against the record, whose client a table write could change.
  if (deps.revoker) {
    const registered = await deps.revoker
      .registerRequestOwner(id, clientId)
      .catch(() => Promise.reject(new DependencyError('the CA')));
    if (!registered) throw new ConflictError('requestId was already used with a different request');
  }
  if (!(await deps.requests.create(record))) {
    const existing = await deps.requests.get(id);
    if (!existing || existing.clientId !== clientId || existing.inputHash !== record.inputHash) {
      throw new ConflictError('requestId was already used with a different request');
    }
    // A replay of a request that may never have reached the queue: enqueueing again is harmless
    // (the consumer is idempotent) and guarantees progress.
    if (existing.status === 'received') await deps.queue.enqueue(id);
    return { record: existing, fresh: false };
  }

  // Demand is counted alongside the enqueue (awaited: a Lambda may freeze once it has answered); a
  // failed count never fails the request, the forecast only loses one sample.
  const counted = deps.recordDemand?.(input.keyType, now).catch(() => undefined);
  try {
    await deps.queue.enqueue(id);
  } catch (err) {
    // Never leave an accepted request that nothing will process: undo, and let the client retry.
    await deps.requests.discard(id).catch(() => undefined);
    throw err;
  } finally {
    await counted;
  }
  return { record, fresh: true };
}

/** What the request weighs in admission: its documents at their levels (a single digest is one document). */
function weightOf(input: SignRequestInput): number {
  return requestWeight(input.documents?.map((d) => d.level ?? input.level) ?? [input.level]);
}
