import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { bodyBytes, headerOf } from '@pipeline/doors';
import { REVOCATION_REASONS, type RevocationReason } from '@pipeline/core/pki';
import {
  ApiError,
  ApiKeyNotYoursError,
  DependencyError,
  NotFoundError,
  UnauthenticatedError,
  ValidationError,
} from './errors';
import { clientFailureOf } from '@pipeline/core/shared';
import { read, submit, type SubmitOutcome } from './intake';
import { errorResponse, json } from './responses';
import type { ApiDeps } from './types';
import { isRequestId } from './validate';

/** What a caller of health is told to wait while the service starts. */
const HEALTH_RETRY_AFTER_SECONDS = 2;

/**
 * The API as one function of an API Gateway (REST, proxy integration) event: routing on the resource,
 * authentication from the request context, the intake's outcomes (intake.ts) as HTTP answers.
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
  const request = parseBody(event, deps.settings.maxBodyBytes);
  const waitSeconds = waitOf(event.queryStringParameters?.wait);
  return answer(event, await submit(deps, { clientId, request, waitSeconds }));
}

async function getSignRequest(event: APIGatewayProxyEvent, deps: ApiDeps): Promise<APIGatewayProxyResult> {
  const clientId = clientIdOf(event, deps);
  const id = event.pathParameters?.id ?? '';
  const waitSeconds = waitOf(event.queryStringParameters?.wait);
  const outcome = await read(deps, { clientId, id, waitSeconds });
  if (outcome.kind === 'refused') return errorResponse(outcome.error, outcome.headers);
  return json(200, outcome.request);
}

/**
 * A submission's outcome: the acceptance (202 new, 200 a resend) or the request as it stands (200), each
 * with the Location to read it from; a refusal as its error.
 */
function answer(event: APIGatewayProxyEvent, outcome: SubmitOutcome): APIGatewayProxyResult {
  switch (outcome.kind) {
    case 'refused':
      return errorResponse(outcome.error, outcome.headers);
    case 'accepted':
      return json(
        outcome.fresh ? 202 : 200,
        { id: outcome.id, status: outcome.status },
        { Location: locationOf(event, outcome.id) },
      );
    case 'result':
      return json(200, outcome.request, { Location: locationOf(event, outcome.request.id) });
  }
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

function locationOf(event: APIGatewayProxyEvent, id: string): string {
  const stage = event.requestContext?.stage ? `/${event.requestContext.stage}` : '';
  return `${stage}/sign-requests/${id}`;
}

function parseBody(event: APIGatewayProxyEvent, maxBytes: number): unknown {
  const bytes = bodyBytes(event);
  if (bytes.length > maxBytes) throw new ApiError('PAYLOAD_TOO_LARGE', `body exceeds ${maxBytes} bytes`);
  const contentType = headerOf(event, 'content-type');
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

/**
 * The query's `wait` as a number of seconds: absent is 0, anything but one or two digits NaN (which the
 * intake refuses, after the request's own checks, with the range it accepts).
 */
function waitOf(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 0;
  return /^\d{1,2}$/.test(raw) ? Number(raw) : Number.NaN;
}
