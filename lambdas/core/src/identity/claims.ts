import { createHash } from 'node:crypto';
import { AssertionError } from './errors';
import type { AssertionPolicy } from './types';

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

/**
 * The checks OpenID Connect Core 3.1.3.7 asks of a relying party once the signature verified, plus this
 * service's own: audience (and `azp` when several), lifetime with a bounded clock skew, a recent login,
 * an accepted level of assurance, and the nonce that binds the login to one sign request. Pure: the time
 * comes in as `nowMs`. Throws AssertionError with the code of the first failed check.
 */
export function checkAssertionClaims(
  payload: Payload,
  policy: AssertionPolicy,
  expectedNonce: string,
  nowMs: number,
): AssertionClaims {
  const now = nowMs / 1000;
  const skew = policy.clockSkewSeconds;
  const issuer = stringClaim(payload, 'iss');
  const subject = stringClaim(payload, 'sub', 255);

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

  const expiresAt = timeClaim(payload, 'exp', true)!;
  const issuedAt = timeClaim(payload, 'iat', true)!;
  const notBefore = timeClaim(payload, 'nbf', false);
  if (now > expiresAt + skew) throw new AssertionError('ASSERTION_EXPIRED', 'the assertion has expired');
  if (issuedAt > now + skew || (notBefore !== undefined && notBefore > now + skew)) {
    throw new AssertionError('ASSERTION_NOT_YET_VALID', 'the assertion is not valid yet (iat or nbf)');
  }
  if (expiresAt - issuedAt > policy.maxLifetimeSeconds) {
    throw new AssertionError(
      'ASSERTION_CLAIMS_INVALID',
      `the assertion lives longer than ${policy.maxLifetimeSeconds} s (exp - iat)`,
    );
  }

  const authTime = timeClaim(payload, 'auth_time', true)!;
  if (authTime > now + skew) {
    throw new AssertionError('ASSERTION_NOT_YET_VALID', 'auth_time is in the future');
  }
  if (now - authTime > policy.maxAuthAgeSeconds + skew) {
    throw new AssertionError(
      'ASSERTION_AUTH_TOO_OLD',
      `the citizen authenticated more than ${policy.maxAuthAgeSeconds} s ago`,
    );
  }

  const acr = payload.acr;
  if (typeof acr !== 'string' || !policy.acceptedAcr.includes(acr)) {
    throw new AssertionError('ASSERTION_LOA_INSUFFICIENT', 'the level of assurance (acr) is not accepted');
  }

  if (payload.nonce !== expectedNonce) {
    throw new AssertionError(
      'ASSERTION_BINDING_MISMATCH',
      'the assertion is bound to another sign request (nonce does not match requestId and digest)',
    );
  }
  return { issuer, subject, acr, authTime, issuedAt, expiresAt };
}

/** The replay key of an assertion (see VerifiedAssertion.replayKey). */
export function assertionReplayKey(claims: AssertionClaims, nonce: string): string {
  return createHash('sha256')
    .update(JSON.stringify([claims.issuer, claims.subject, nonce, claims.issuedAt]))
    .digest('hex');
}
