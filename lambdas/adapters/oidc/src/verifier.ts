import { compactVerify, decodeProtectedHeader } from 'jose';
import {
  AssertionError,
  IdentityProviderUnavailableError,
  assertionReplayKey,
  checkAssertionClaims,
  signerFromClaims,
  type AssertionPolicy,
  type AssertionVerifier,
  type ClaimMapping,
  type VerifiedAssertion,
} from '../../../core/src';
import { createHash } from 'node:crypto';
import type { RefreshingJwks } from './jwks';

/** Three base64url segments: header, payload, signature (RFC 7515 compact serialization). */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export interface JwsAssertionVerifierOptions {
  /** Trusted issuers (`iss`) and their keys. */
  readonly issuers: ReadonlyMap<string, RefreshingJwks>;
  /** Accepted JWS algorithms: asymmetric only (the configuration refuses `none` and HMAC). */
  readonly algorithms: readonly string[];
  readonly policy: AssertionPolicy;
  readonly mapping: ClaimMapping;
  readonly maxLength: number;
  readonly clock?: () => number;
}

/** The jose failures of signature verification, by code, as this service's codes. */
const JOSE_CODES: Readonly<Record<string, AssertionError['code']>> = {
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'ASSERTION_SIGNATURE_INVALID',
  ERR_JWKS_NO_MATCHING_KEY: 'ASSERTION_UNKNOWN_KEY',
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'ASSERTION_UNKNOWN_KEY',
  ERR_JOSE_ALG_NOT_ALLOWED: 'ASSERTION_ALGORITHM_NOT_ALLOWED',
  ERR_JWS_INVALID: 'ASSERTION_MALFORMED',
  ERR_JOSE_NOT_SUPPORTED: 'ASSERTION_MALFORMED',
};

const MESSAGES: Readonly<Record<AssertionError['code'], string>> = {
  ASSERTION_SIGNATURE_INVALID: 'the assertion signature does not verify with the issuer key',
  ASSERTION_UNKNOWN_KEY: 'the assertion names a key (kid) the issuer does not publish',
  ASSERTION_ALGORITHM_NOT_ALLOWED: 'the assertion algorithm is not accepted',
  ASSERTION_MALFORMED: 'the assertion is not a well-formed JWS',
} as Record<AssertionError['code'], string>;

/**
 * Verifies OpenID Connect ID tokens (compact JWS) bound to one sign request: shape and size, the header's
 * algorithm against the allowed list before any key is touched (so `none` and HMAC never reach a
 * verifier, and an RSA public key is never used as an HMAC secret), the issuer against the trusted list,
 * the signature against that issuer's published keys, then the claims (checkAssertionClaims) and the
 * identity (signerFromClaims) from the verified payload only.
 */
export class JwsAssertionVerifier implements AssertionVerifier {
  private readonly clock: () => number;

  public constructor(private readonly options: JwsAssertionVerifierOptions) {
    this.clock = options.clock ?? Date.now;
  }

  public async verify(token: string, expectedNonce: string): Promise<VerifiedAssertion> {
    const { options } = this;
    if (typeof token !== 'string' || token.length > options.maxLength || !COMPACT_JWS.test(token)) {
      throw new AssertionError('ASSERTION_MALFORMED', 'identityAssertion is not a compact JWS');
    }
    // Canonical base64url only: otherwise the unused bits of a segment's last character would let one
    // token be spelled several ways.
    if (
      !token
        .split('.')
        .every((segment) => Buffer.from(segment, 'base64url').toString('base64url') === segment)
    ) {
      throw new AssertionError('ASSERTION_MALFORMED', 'identityAssertion is not canonical base64url');
    }
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw new AssertionError('ASSERTION_MALFORMED', 'the assertion header is not a JSON object');
    }
    if (typeof alg !== 'string' || !options.algorithms.includes(alg)) {
      throw new AssertionError(
        'ASSERTION_ALGORITHM_NOT_ALLOWED',
        `the assertion algorithm must be one of ${options.algorithms.join(', ')}`,
      );
    }
    // The issuer picks the key set; it is read unverified here and trusted only once its key verified.
    const keys = options.issuers.get(unverifiedIssuer(token) ?? '');
    if (!keys) throw new AssertionError('ASSERTION_ISSUER_UNTRUSTED', 'the assertion issuer is not trusted');

    let payload: Record<string, unknown>;
    try {
      const verified = await compactVerify(token, keys.resolve, { algorithms: [...options.algorithms] });
      payload = JSON.parse(Buffer.from(verified.payload).toString('utf8')) as Record<string, unknown>;
    } catch (err) {
      throw verificationError(err);
    }
    if (!payload || typeof payload !== 'object' || Array.isArray(payload)) {
      throw new AssertionError('ASSERTION_MALFORMED', 'the assertion payload is not a JSON object');
    }
    const claims = checkAssertionClaims(payload, options.policy, expectedNonce, this.clock());
    return {
      signer: signerFromClaims(payload, options.mapping),
      evidence: {
        source: 'assertion',
        issuer: claims.issuer,
        subject: claims.subject,
        assertionHash: createHash('sha256').update(token).digest('hex'),
        acr: claims.acr,
        authTime: claims.authTime * 1000,
      },
      replayKey: assertionReplayKey(claims, expectedNonce),
      expiresAt: (claims.expiresAt + options.policy.clockSkewSeconds) * 1000,
    };
  }
}

function unverifiedIssuer(token: string): string | undefined {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as unknown;
    const iss = (payload as { iss?: unknown } | null)?.iss;
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    throw new AssertionError('ASSERTION_MALFORMED', 'the assertion payload is not JSON');
  }
}

function verificationError(err: unknown): Error {
  if (err instanceof AssertionError || err instanceof IdentityProviderUnavailableError) return err;
  if (err instanceof SyntaxError) {
    return new AssertionError('ASSERTION_MALFORMED', 'the assertion payload is not JSON');
  }
  const code = JOSE_CODES[String((err as { code?: unknown })?.code)] ?? 'ASSERTION_SIGNATURE_INVALID';
  return new AssertionError(code, MESSAGES[code]);
}
