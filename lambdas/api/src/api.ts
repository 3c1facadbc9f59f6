import { createHash } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import {
  AssertionError,
  assertionNonce,
  requestBindingOf,
  expectedApproval,
  signMessageHash,
  type IdentityEvidence,
  type SignerIdentity,
} from '@pipeline/core/identity';
import { REVOCATION_REASONS, type RevocationReason } from '@pipeline/core/pki';
import { isTerminal, requestExpiresAt, type SignRequestRecord } from '@pipeline/core/signing';
import {
  ApiError,
  ApiKeyNotYoursError,
  ConflictError,
  DependencyError,
  NotFoundError,
  ThrottledError,
  UnauthenticatedError,
  ValidationError,
} from './errors';
import { clientFailureOf } from '@pipeline/core/shared';
import { errorResponse, json } from './responses';
import type { Admission, ApiDeps, SignRequestInput } from './types';
import { isRequestId, parseSignRequest } from './validate';
import { toView } from './view';

const MAX_WAIT_SECONDS = 20;
/** With word of ended requests, a wait still reads at least this often (ms): a word may be lost. */
const ENDED_FALLBACK_MS = 1000;

/** What a caller of health is told to wait while the service starts. */
const HEALTH_RETRY_AFTER_SECONDS = 2;

/**
 * The API as one function of an API Gateway (REST, proxy integration) event: routing on the resource,
 * authentication from the request context, validation, idempotent creation, long-polling reads.
 * Every failure becomes a JSON error with a code; unexpected ones are reported to `onUnexpected`.
 */
export async function handleApiEvent(
  event: APIGatewayProxyEvent,
  deps: ApiDeps,
  onUnexpected: (error: unknown) => void = () => undefined,
): Promise<APIGatewayProxyResult> {
  try {
    const route = `${event.httpMethod} ${event.resource}`;
    switch (route) {
      case 'POST /sign-requests':
        return await createSignRequest(event, deps);
      case 'GET /sign-requests/{id}':
        return await getSignRequest(event, deps);
      case 'POST /sign-requests/{id}/revocation':
        return await revokeCertificate(event, deps);
      case 'GET /health':
        return await health(event, deps);
      default:
        throw new ApiError('ROUTE_NOT_FOUND', `no route ${event.httpMethod} ${event.path}`);
    }
  } catch (err) {
    const failure = clientFailureOf(err);
    if (failure.kind === 'internal') onUnexpected(err);
    return errorResponse(failure, err instanceof ApiError ? err.headers : {});
  }
}

/**
 * The caller: the IAM principal in AWS, the API key's client locally. Where API keys are bound to
 * principals (AWS), the key must be the caller's own: a request with another client's key (its usage
 * plan's throttle and quota) is refused, so no client spends another's quota.
 */
export function clientIdOf(event: APIGatewayProxyEvent, deps: Pick<ApiDeps, 'settings'>): string {
  const identity = event.requestContext?.identity;
  const clientId = identity?.userArn || identity?.apiKeyId || identity?.caller;
  if (!clientId) throw new UnauthenticatedError();
  const principals = deps.settings.apiKeyPrincipals;
  if (principals) {
    const owner = identity?.apiKeyId ? principals.get(identity.apiKeyId) : undefined;
    if (!identity?.userArn || owner !== identity.userArn) throw new ApiKeyNotYoursError();
  }
  return clientId;
}

async function createSignRequest(event: APIGatewayProxyEvent, deps: ApiDeps): Promise<APIGatewayProxyResult> {
  const clientId = clientIdOf(event, deps);
  const input = parseSignRequest(parseBody(event, deps.settings.maxBodyBytes));
  // Checked before anything is spent: a bad wait costs neither admission nor the assertion's single use.
  const wait = parseWait(event.queryStringParameters?.wait);
  const deadline = (deps.now ?? Date.now)() + wait * 1000;
  const admitted = deps.admission ? await admit(input, clientId, deps.admission, deps) : undefined;
  let created: Created;
  try {
    created = await create(deps, input, clientId);
    // Counted by the admission only while it is a new open request.
    if (!created.fresh) admitted?.();
  } catch (err) {
    admitted?.();
    throw err;
  }
  const { record, fresh } = created;
  // Without wait, the answer is the acceptance (202 new, 200 a resend); with wait, the request waited for
  // as the GET waits: 200 with the request as the GET answers it once it ended (a resend: whatever its
  // state at the deadline), else 202 with the Location to read it from.
  if (wait === 0) return accepted(event, record.id, record.status, fresh ? 202 : 200);
  const latest = await waitUntilTerminal(record, deps, deadline);
  if (fresh && !isTerminal(latest.status)) return accepted(event, latest.id, latest.status, 202);
  return json(200, toView(latest), { Location: locationOf(event, latest.id) });
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
  const { decision, cancel } = await admission.decide(input.keyType, clientId);
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
    // The hash of the message the citizen approved; the e-service's own message (the CA composes it again).
    ...(input.signMessage && input.approvedMessage
      ? { signMessageHash: signMessageHash(input.approvedMessage), signMessage: input.signMessage }
      : {}),
    signer,
    identity,
    identityAssertion: input.identityAssertion,
    inputHash: inputHash(clientId, input, signer, identity),
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

/** Reasons an e-service may give (cACompromise is the CA operator's to declare, not a client's). */
const CLIENT_REVOCATION_REASONS: readonly RevocationReason[] = REVOCATION_REASONS.filter(
  (r) => r !== 'cACompromise',
);

/**
 * Revokes the certificate of one of the caller's signed requests, through the CA, which revokes the
 * certificate it issued for this request id if it recorded the id as this client's. Another client's
 * request is not found, like on GET (whatever its record says); a request without a certificate is a
 * conflict.
 */
async function revokeCertificate(event: APIGatewayProxyEvent, deps: ApiDeps): Promise<APIGatewayProxyResult> {
  const clientId = clientIdOf(event, deps);
  const id = (event.pathParameters?.id ?? '').toLowerCase();
  if (!isRequestId(id)) throw new ValidationError('id must be a UUID');
  const body = parseBody(event, deps.settings.maxBodyBytes) as { reason?: unknown } | null;
  const reason = body?.reason;
  if (
    !body ||
    typeof body !== 'object' ||
    Object.keys(body).some((k) => k !== 'reason') ||
    !CLIENT_REVOCATION_REASONS.includes(reason as RevocationReason)
  ) {
    throw new ValidationError(`body must be {"reason": one of ${CLIENT_REVOCATION_REASONS.join(', ')}}`);
  }
  const record = await deps.requests.get(id);
  if (!record || record.clientId !== clientId) throw new NotFoundError();
  if (!record.certificateSerial) {
    throw new ApiError('NOT_SIGNED', `the request is ${record.status}: it has no certificate to revoke`);
  }
  if (!deps.revoker) throw new DependencyError('the CA');
  // What is revoked is the CA's record of this request for this client, never the record's serial.
  const revoked = await deps.revoker
    .revokeRequest(id, reason as RevocationReason, clientId)
    .catch(() => Promise.reject(new DependencyError('the CA')));
  // The CA has the request as another client's: the record was rewritten.
  if (revoked.outcome === 'not-owned') throw new NotFoundError();
  if (revoked.outcome === 'unknown') {
    throw new ApiError('NOT_SIGNED', 'the CA issued no certificate for this request');
  }
  return json(200, {
    id,
    certificateSerial: revoked.serialHex,
    status: 'revoked',
    reason: revoked.reason,
    revokedAt: new Date(revoked.revokedAt).toISOString(),
    ...(revoked.outcome === 'already-revoked' ? { alreadyRevoked: true } : {}),
    ...(revoked.receipt ? { receipt: revoked.receipt } : {}),
  });
}

/**
 * The signer and who vouches for it: the identity assertion, verified and bound to this request (its
 * nonce is derived from the request id, the digest and how it is signed, and the sign message's hash
 * when there is one: then an ID token must also carry its issuer's approval of exactly that message for
 * this digest), then claimed once. An ID token
 * from a trusted identity provider names the person it authenticated; a request object signed with a
 * registered client's key (IDENTITY_CLIENT_KEYS) names the person that client vouches for, and is
 * accepted only from that client itself. The identity never comes from the caller's word, and the CA
 * verifies the same assertion again before it certifies.
 */
async function identify(
  input: SignRequestInput,
  clientId: string,
  deps: ApiDeps,
): Promise<{ signer: SignerIdentity; identity: IdentityEvidence }> {
  const { identity } = deps;
  // Answered as every error is (clientFailureOf): its code, at the registry's status.
  const refuseAssertion = (err: AssertionError): never => {
    deps.onAssertionRefused?.(err.code, { clientId, requestId: input.requestId });
    throw err;
  };
  try {
    // v2 for a single document, v3 (the manifest of the documents) for `documents`.
    const binding = requestBindingOf({
      ...input,
      id: input.requestId,
      ...(input.approvedMessage ? { signMessageHash: signMessageHash(input.approvedMessage) } : {}),
    });
    const verified = await identity.verifier.verify(input.identityAssertion, assertionNonce(binding), {
      approval: expectedApproval(binding),
    });
    if (verified.evidence.source === 'trusted-client' && verified.evidence.client !== clientId) {
      throw new AssertionError(
        'CLIENT_NOT_TRUSTED',
        'a request object is accepted only from the client whose registered key signed it',
      );
    }
    const fresh = await identity.assertions.claim(verified.replayKey, {
      requestId: input.requestId,
      clientId,
      expiresAt: verified.expiresAt,
    });
    if (!fresh) {
      throw new AssertionError(
        'ASSERTION_REPLAYED',
        'this identity assertion was already used for another request',
      );
    }
    return { signer: verified.signer, identity: verified.evidence };
  } catch (err) {
    if (err instanceof AssertionError) return refuseAssertion(err);
    throw err;
  }
}

async function getSignRequest(event: APIGatewayProxyEvent, deps: ApiDeps): Promise<APIGatewayProxyResult> {
  const clientId = clientIdOf(event, deps);
  const id = (event.pathParameters?.id ?? '').toLowerCase();
  if (!isRequestId(id)) throw new ValidationError('id must be a UUID');
  const wait = parseWait(event.queryStringParameters?.wait);
  const deadline = (deps.now ?? Date.now)() + wait * 1000;

  const record = await deps.requests.get(id);
  // Another client's request is reported exactly like a missing one: ids leak nothing.
  if (!record || record.clientId !== clientId) throw new NotFoundError();
  return json(200, toView(await waitUntilTerminal(record, deps, deadline)));
}

/**
 * The long-poll of GET and of POST with wait: the request as last read once it is `signed` or `failed`,
 * or at the deadline. With word of ended requests (deps.endings) it reads when the word comes, and
 * otherwise only every ENDED_FALLBACK_MS or half the request's age, whichever is longer (a lost word): a
 * client that waits again and again for a request stuck in a backlog reads it about as often as one wait. Without, it polls often at first (most
 * requests finish within tens of ms), then less the longer the wait: under a backlog, waiting clients
 * must not flood the table with reads and slow down the very work they await.
 */
async function waitUntilTerminal(
  first: SignRequestRecord,
  deps: ApiDeps,
  deadline: number,
): Promise<SignRequestRecord> {
  let record = first;
  const waitStarted = Date.now();
  // The request's age, not this wait's: a later wait for the same request starts where the last left off.
  const since = Math.min(waitStarted, first.receivedAt);
  // Any word counts before the first read of this wait (the record may have ended just before it began).
  let lastRead = -1;
  for (;;) {
    if (isTerminal(record.status)) return record;
    const now = Date.now();
    if (deps.endings) {
      const left = deadline - now;
      if (left <= 0) return record;
      const fallback = Math.max(ENDED_FALLBACK_MS, (now - since) / 2);
      const said = await deps.endings.wait(record.id, Math.min(left, fallback), lastRead);
      if (!said && Date.now() >= deadline) return record;
    } else {
      const delay = Math.min(1000, Math.max(25, (now - waitStarted) / 4));
      if (now + delay >= deadline) return record;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    lastRead = deps.endings?.mark() ?? 0;
    record = (await deps.requests.get(record.id)) ?? record;
  }
}

/**
 * Readiness for anyone (a load balancer, a script waiting for the service): `ok`, or `starting` with 503
 * and Retry-After while the service is still starting (deps.ready: tables, the pool's initial fill, the
 * warm-up). Pool and queue depths only for an identified caller, since they tell an outsider how busy the
 * service is (operators also have them as metrics).
 */
async function health(event: APIGatewayProxyEvent, deps: ApiDeps): Promise<APIGatewayProxyResult> {
  let identified = true;
  try {
    clientIdOf(event, deps);
  } catch {
    identified = false;
  }
  const ready = deps.ready?.() ?? true;
  const status = ready ? 'ok' : 'starting';
  const code = ready ? 200 : 503;
  const headers = ready ? undefined : { 'Retry-After': String(HEALTH_RETRY_AFTER_SECONDS) };
  if (!identified) return json(code, { status }, headers);
  const [pool, queue] = await Promise.all([deps.pool.available(), deps.queue.depth()]);
  return json(code, { status, pool, queue: { depth: queue.visible, inFlight: queue.inFlight } }, headers);
}

function accepted(
  event: APIGatewayProxyEvent,
  id: string,
  status: string,
  code: number,
): APIGatewayProxyResult {
  return json(code, { id, status }, { Location: locationOf(event, id) });
}

function locationOf(event: APIGatewayProxyEvent, id: string): string {
  const stage = event.requestContext?.stage ? `/${event.requestContext.stage}` : '';
  return `${stage}/sign-requests/${id}`;
}

function parseBody(event: APIGatewayProxyEvent, maxBytes: number): unknown {
  const raw = event.body ?? '';
  const bytes = event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
  if (bytes.length > maxBytes) throw new ApiError('PAYLOAD_TOO_LARGE', `body exceeds ${maxBytes} bytes`);
  const contentType = headerValue(event, 'content-type');
  if (contentType && !/^application\/json\b/i.test(contentType)) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE');
  }
  const text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes)) throw new ValidationError('body is not valid UTF-8');
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError('INVALID_JSON', 'body is not valid JSON');
  }
}

function parseWait(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 0;
  const wait = Number(raw);
  if (!/^\d{1,2}$/.test(raw) || wait > MAX_WAIT_SECONDS) {
    throw new ValidationError(`wait must be an integer from 0 to ${MAX_WAIT_SECONDS}`);
  }
  return wait;
}

function headerValue(event: APIGatewayProxyEvent, name: string): string | undefined {
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === name) return value ?? undefined;
  }
  return undefined;
}

/**
 * What makes a resend the same request: the client, what is signed and how, and whom for (by the identity
 * provider's subject, so a second login of the same person for the same request is a resend too).
 */
function inputHash(
  clientId: string,
  input: SignRequestInput,
  signer: SignerIdentity,
  identity: IdentityEvidence,
): string {
  const canonical = JSON.stringify([
    clientId,
    input.digest,
    input.digestAlgorithm,
    input.keyType,
    input.signatureAlgorithm,
    input.format ?? null,
    input.profile ?? null,
    input.level ?? null,
    input.minimumLevel ?? null,
    input.approvedMessage ? signMessageHash(input.approvedMessage) : null,
    [signer.commonName, signer.givenName, signer.surname, signer.serialNumber, signer.country],
    identity.source === 'assertion'
      ? [identity.issuer, identity.subject]
      : [identity.source, identity.client],
    // Every document as resolved, in order (a single document request's canonical form is unchanged).
    ...(input.documents ? [input.documents] : []),
  ]);
  return createHash('sha256').update(canonical).digest('base64url');
}
