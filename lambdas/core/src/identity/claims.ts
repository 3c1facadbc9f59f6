import { createHash } from 'node:crypto';
import { InvalidIdentityError, validateSignerIdentity } from './certificate-profile';
import type { SignerIdentity } from './types';
import { AssertionError } from './errors';
import type { AssertionPolicy, VerifyOptions } from './types';

/** The registered claims this service relies on, read from a verified payload. */
export interface AssertionClaims {
  readonly issuer: string;
  readonly subject: string;
  readonly acr: string;
  /** Epoch seconds. */
  readonly authTime: number;
  readonly issuedAt: number;
  readonly expiresAt: number;
}

type Payload = Readonly<Record<string, unknown>>;

function stringClaim(payload: Payload, name: string, max = 1024): string {
  const value = payload[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new AssertionError('ASSERTION_CLAIMS_INVALID', `claim ${name} is missing or not a string`);
  }
  return value;
}

function timeClaim(payload: Payload, name: string, required: boolean): number | undefined {
  const value = payload[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new AssertionError('ASSERTION_CLAIMS_INVALID', `claim ${name} is missing or not a NumericDate`);
  }
  return value;
}

function checkAudience(payload: Payload, policy: AssertionPolicy): void {
  const aud = payload.aud;
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  if (!audiences.includes(policy.audience)) {
    throw new AssertionError('ASSERTION_AUDIENCE_MISMATCH', 'the assertion was not issued to this service');
  }
  if (audiences.length > 1 && payload.azp !== policy.audience) {
    throw new AssertionError(
      'ASSERTION_AUDIENCE_MISMATCH',
      'azp must name this service when aud names several',
    );
  }
}

/**
 * The lifetime rules: `iat`/`nbf` not in the future, `exp - iat` bounded; then either the token's own
 * `exp` (at the API) or, at the CA, `iat` no older than the CA's bound (VerifyOptions.maxAgeSeconds).
 */
function checkLifetime(
  payload: Payload,
  policy: AssertionPolicy,
  now: number,
  options: VerifyOptions,
): { issuedAt: number; expiresAt: number } {
  const skew = policy.clockSkewSeconds;
  const expiresAt = timeClaim(payload, 'exp', true)!;
  const issuedAt = timeClaim(payload, 'iat', true)!;
  const notBefore = timeClaim(payload, 'nbf', false);
  if (options.maxAgeSeconds === undefined && now > expiresAt + skew) {
    throw new AssertionError('ASSERTION_EXPIRED', 'the assertion has expired');
  }
  if (issuedAt > now + skew || (notBefore !== undefined && notBefore > now + skew)) {
    throw new AssertionError('ASSERTION_NOT_YET_VALID', 'the assertion is not valid yet (iat or nbf)');
  }
  if (expiresAt - issuedAt > policy.maxLifetimeSeconds) {
    throw new AssertionError(
      'ASSERTION_CLAIMS_INVALID',
      `the assertion lives longer than ${policy.maxLifetimeSeconds} s (exp - iat)`,
    );
  }
  stale(now - issuedAt, policy, options);
  return { issuedAt, expiresAt };
}

/** At the CA: older than a request may wait in the queue (the request ends ASSERTION_STALE). */
function stale(ageSeconds: number, policy: AssertionPolicy, options: VerifyOptions): void {
  if (options.maxAgeSeconds !== undefined && ageSeconds > options.maxAgeSeconds + policy.clockSkewSeconds) {
    throw new AssertionError(
      'ASSERTION_STALE',
      `the assertion was issued more than ${options.maxAgeSeconds} s ago: too long for a request to wait`,
    );
  }
}

function checkNonce(payload: Payload, expectedNonce: string): void {
  if (payload.nonce !== expectedNonce) {
    throw new AssertionError(
      'ASSERTION_BINDING_MISMATCH',
      'the assertion is bound to another sign request (nonce does not match the request it is used for)',
    );
  }
}

/**
 * The checks OpenID Connect Core 3.1.3.7 asks of a relying party once the signature verified, plus this
 * service's own: audience (and `azp` when several), lifetime with a bounded clock skew, a login made for
 * this token (`iat - auth_time` bounded: no token minted silently from an old session), a recent login,
 * an accepted level of assurance, and the nonce that binds the login to one sign request. Pure: the time
 * comes in as `nowMs`. Throws AssertionError with the code of the first failed check.
 */
export function checkAssertionClaims(
  payload: Payload,
  policy: AssertionPolicy,
  expectedNonce: string,
  nowMs: number,
  options: VerifyOptions = {},
): AssertionClaims {
  const now = nowMs / 1000;
  const skew = policy.clockSkewSeconds;
  const issuer = stringClaim(payload, 'iss');
  const subject = stringClaim(payload, 'sub', 255);
  checkAudience(payload, policy);
  const { issuedAt, expiresAt } = checkLifetime(payload, policy, now, options);

  const authTime = timeClaim(payload, 'auth_time', true)!;
  if (authTime > now + skew) {
    throw new AssertionError('ASSERTION_NOT_YET_VALID', 'auth_time is in the future');
  }
  if (issuedAt - authTime > policy.maxAuthGapSeconds) {
    throw new AssertionError(
      'ASSERTION_LOGIN_NOT_FRESH',
      `the token was issued more than ${policy.maxAuthGapSeconds} s after the login: ask for a new login (prompt=login)`,
    );
  }
  if (options.maxAgeSeconds === undefined && now - authTime > policy.maxAuthAgeSeconds + skew) {
    throw new AssertionError(
      'ASSERTION_AUTH_TOO_OLD',
      `the citizen authenticated more than ${policy.maxAuthAgeSeconds} s ago`,
    );
  }
  stale(now - authTime, policy, options);

  const acr = payload.acr;
  if (typeof acr !== 'string' || !policy.acceptedAcr.includes(acr)) {
    throw new AssertionError('ASSERTION_LOA_INSUFFICIENT', 'the level of assurance (acr) is not accepted');
  }

  checkNonce(payload, expectedNonce);
  return { issuer, subject, acr, authTime, issuedAt, expiresAt };
}

/** What a trusted client's verified request object states. */
export interface RequestObjectClaims {
  /** The client (`iss`). */
  readonly client: string;
  readonly signer: SignerIdentity;
  readonly issuedAt: number;
  readonly expiresAt: number;
}

/**
 * A trusted client's request object (a JWS signed with its registered key, typ `sign-request+jwt`): `iss`
 * the client, `aud` this service, `iat`/`exp` as for ID tokens, `nonce` the binding, and `signer`, the
 * person the client vouches for, which must pass the certificate profile. Pure, like checkAssertionClaims.
 */
export function checkRequestObjectClaims(
  payload: Payload,
  policy: AssertionPolicy,
  expectedNonce: string,
  nowMs: number,
  options: VerifyOptions = {},
): RequestObjectClaims {
  const client = stringClaim(payload, 'iss', 256);
  checkAudience(payload, policy);
  const { issuedAt, expiresAt } = checkLifetime(payload, policy, nowMs / 1000, options);
  checkNonce(payload, expectedNonce);
  let signer: SignerIdentity;
  try {
    signer = validateSignerIdentity(payload.signer);
  } catch (err) {
    if (!(err instanceof InvalidIdentityError)) throw err;
    throw new AssertionError(
      'ASSERTION_CLAIMS_INVALID',
      `claim signer.${err.field} is invalid: ${err.problem}`,
    );
  }
  return { client, signer, issuedAt, expiresAt };
}

/** The replay key of an assertion (see VerifiedAssertion.replayKey). */
export function assertionReplayKey(claims: AssertionClaims, nonce: string): string {
  return createHash('sha256')
    .update(JSON.stringify([claims.issuer, claims.subject, nonce, claims.issuedAt]))
    .digest('hex');
}

/** The replay key of a request object: its client, nonce and issue time (no `sub`: the client vouches). */
export function requestObjectReplayKey(claims: RequestObjectClaims, nonce: string): string {
  return createHash('sha256')
    .update(JSON.stringify([claims.client, 'request-object', nonce, claims.issuedAt]))
    .digest('hex');
}
