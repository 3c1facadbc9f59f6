import { compactVerify, decodeProtectedHeader } from 'jose';
import {
  AssertionError,
  IdentityProviderUnavailableError,
  SIGN_APPROVAL_TYPE,
  USER_SIGNATURE_CLAIM,
  assertionReplayKey,
  checkAssertionClaims,
  checkRequestObjectClaims,
  checkSignApproval,
  claimSources,
  CLIENT_VOUCHED_AUTHN_CONTEXT,
  vouchedAttribute,
  requestObjectReplayKey,
  signerFromClaims,
  type AssertionPolicy,
  type AssertionVerifier,
  type ClaimMapping,
  type VerifiedAssertion,
  type VerifyOptions,
} from '@pipeline/core/identity';
import { createHash } from 'node:crypto';
import type { RefreshingJwks } from './jwks';

/** The subject's attributes, most significant first (certificate-profile.ts). */
const SUBJECT_ORDER = ['country', 'surname', 'givenName', 'serialNumber', 'commonName'] as const;

/** Three base64url segments: header, payload, signature (RFC 7515 compact serialization). */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** The JWS `typ` of a trusted client's request object (explicit typing, RFC 8725 section 3.11). */
export const REQUEST_OBJECT_TYPE = 'sign-request+jwt';

export interface JwsAssertionVerifierOptions {
  /** Trusted identity providers (`iss`) and their keys. */
  readonly issuers: ReadonlyMap<string, RefreshingJwks>;
  /** Clients that may vouch for signers in request objects (`iss` = client id), and their keys. */
  readonly clients?: ReadonlyMap<string, RefreshingJwks>;
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
 * Verifies the evidence of who signs (compact JWS) bound to one sign request: shape and size, the header's
 * algorithm against the allowed list before any key is touched (so `none` and HMAC never reach a
 * verifier, and an RSA public key is never used as an HMAC secret), the issuer against the trusted lists,
 * the signature against that issuer's keys, then the claims and the identity from the verified payload
 * only. An `iss` among the identity providers makes it an ID token (checkAssertionClaims, subject from
 * the claims through the mapping); an `iss` among the registered clients makes it a request object, which
 * must say so in its `typ` (checkRequestObjectClaims, subject from its `signer`). Neither kind is accepted
 * as the other.
 */
export class JwsAssertionVerifier implements AssertionVerifier {
  private readonly clock: () => number;

  public constructor(private readonly options: JwsAssertionVerifierOptions) {
    this.clock = options.clock ?? Date.now;
  }

  public async verify(
    token: string,
    expectedNonce: string,
    verifyOptions: VerifyOptions = {},
  ): Promise<VerifiedAssertion> {
    const header = this.checkedHeader(token);
    const { keys, clientKeys } = this.keysOf(token, header);
    const payload = await this.verifiedPayload(token, keys);
    const assertionHash = createHash('sha256').update(token).digest('hex');
    if (clientKeys) return this.requestObjectAssertion(payload, expectedNonce, verifyOptions, assertionHash);
    return this.idTokenAssertion(payload, keys, expectedNonce, verifyOptions, assertionHash);
  }

  /**
   * A compact JWS in canonical base64url whose header names an allowed algorithm: checked before any
   * key is touched.
   */
  private checkedHeader(token: string): ReturnType<typeof decodeProtectedHeader> {
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
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw new AssertionError('ASSERTION_MALFORMED', 'the assertion header is not a JSON object');
    }
    const alg = header.alg;
    if (typeof alg !== 'string' || !options.algorithms.includes(alg)) {
      throw new AssertionError(
        'ASSERTION_ALGORITHM_NOT_ALLOWED',
        `the assertion algorithm must be one of ${options.algorithms.join(', ')}`,
      );
    }
    return header;
  }

  /**
   * The key set of the token's issuer: an identity provider's (an ID token) or a registered client's (a
   * request object, which must say so in its typ).
   */
  private keysOf(
    token: string,
    header: ReturnType<typeof decodeProtectedHeader>,
  ): { keys: RefreshingJwks; clientKeys: RefreshingJwks | undefined } {
    const { options } = this;
    // The issuer picks the key set; it is read unverified here and trusted only once its key verified.
    const issuer = unverifiedIssuer(token) ?? '';
    const idpKeys = options.issuers.get(issuer);
    const clientKeys = idpKeys ? undefined : options.clients?.get(issuer);
    const keys = idpKeys ?? clientKeys;
    if (!keys) throw new AssertionError('ASSERTION_ISSUER_UNTRUSTED', 'the assertion issuer is not trusted');
    const isRequestObject = header.typ === REQUEST_OBJECT_TYPE;
    if (isRequestObject !== (clientKeys !== undefined)) {
      throw new AssertionError(
        'ASSERTION_MALFORMED',
        clientKeys
          ? `a client's request object must have typ ${REQUEST_OBJECT_TYPE}`
          : `an ID token must not have typ ${REQUEST_OBJECT_TYPE}`,
      );
    }
    return { keys, clientKeys };
  }

  /** The payload, once the signature verified with the issuer's keys: a JSON object. */
  private async verifiedPayload(token: string, keys: RefreshingJwks): Promise<Record<string, unknown>> {
    let payload: Record<string, unknown>;
    try {
      const verified = await compactVerify(token, keys.resolve, { algorithms: [...this.options.algorithms] });
      payload = JSON.parse(Buffer.from(verified.payload).toString('utf8')) as Record<string, unknown>;
    } catch (err) {
      throw verificationError(err);
    }
    if (!payload || typeof payload !== 'object' || Array.isArray(payload)) {
      throw new AssertionError('ASSERTION_MALFORMED', 'the assertion payload is not a JSON object');
    }
    return payload;
  }

  /** A trusted client's request object: the client vouches for the signer it names. */
  private requestObjectAssertion(
    payload: Record<string, unknown>,
    expectedNonce: string,
    verifyOptions: VerifyOptions,
    assertionHash: string,
  ): VerifiedAssertion {
    const { options } = this;
    const skew = options.policy.clockSkewSeconds;
    const claims = checkRequestObjectClaims(
      payload,
      options.policy,
      expectedNonce,
      this.clock(),
      verifyOptions,
    );
    const { signer } = claims;
    return {
      signer,
      evidence: { source: 'trusted-client', client: claims.client, assertionHash },
      replayKey: requestObjectReplayKey(claims, expectedNonce),
      expiresAt: (claims.expiresAt + skew) * 1000,
      issuedAt: claims.issuedAt * 1000,
      // The client vouches: it is the identity provider of its users, as of its request object.
      authContext: {
        identityProvider: claims.client,
        authenticationInstant: claims.issuedAt * 1000,
        authnContextClassRef: CLIENT_VOUCHED_AUTHN_CONTEXT,
        assertionRef: assertionHash,
        serviceId: options.policy.audience,
        attributes: SUBJECT_ORDER.map((field) => vouchedAttribute(field, signer[field])),
      },
    };
  }

  /** An identity provider's ID token (with its sign approval when asked for): the signer from its claims. */
  private async idTokenAssertion(
    payload: Record<string, unknown>,
    keys: RefreshingJwks,
    expectedNonce: string,
    verifyOptions: VerifyOptions,
    assertionHash: string,
  ): Promise<VerifiedAssertion> {
    const { options } = this;
    const skew = options.policy.clockSkewSeconds;
    const claims = checkAssertionClaims(payload, options.policy, expectedNonce, this.clock(), verifyOptions);
    if (verifyOptions.approval) {
      const approval = await this.approvalOf(payload, keys);
      checkSignApproval(
        approval,
        { ...claims, nonce: expectedNonce },
        verifyOptions.approval,
        options.policy,
      );
    }
    const signer = signerFromClaims(payload, options.mapping);
    return {
      signer,
      evidence: {
        source: 'assertion',
        issuer: claims.issuer,
        subject: claims.subject,
        assertionHash,
        acr: claims.acr,
        authTime: claims.authTime * 1000,
      },
      replayKey: assertionReplayKey(claims, expectedNonce),
      expiresAt: (claims.expiresAt + skew) * 1000,
      issuedAt: claims.issuedAt * 1000,
      authContext: {
        identityProvider: claims.issuer,
        authenticationInstant: claims.authTime * 1000,
        authnContextClassRef: claims.acr,
        assertionRef: assertionHash,
        serviceId: options.policy.audience,
        attributes: claimSources(payload, options.mapping),
      },
    };
  }

  /**
   * The verified payload of the token's sign approval (approval.ts): a compact JWS of type
   * SIGN_APPROVAL_TYPE, base64 in the userSignature claim, signed with a key of the token's own issuer
   * (the key set that verified the token) in an allowed algorithm. Its claims are checked by the caller.
   */
  private async approvalOf(
    payload: Record<string, unknown>,
    keys: RefreshingJwks,
  ): Promise<Record<string, unknown>> {
    const value = payload[USER_SIGNATURE_CLAIM];
    if (value === undefined) throw approvalMissing();
    if (typeof value !== 'string' || value.length > this.options.maxLength || !BASE64.test(value)) {
      throw approvalInvalid('is not base64 of a compact JWS');
    }
    const jws = Buffer.from(value, 'base64').toString('utf8');
    if (!COMPACT_JWS.test(jws)) throw approvalInvalid('is not base64 of a compact JWS');
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(jws);
    } catch {
      throw approvalInvalid('has no JSON header');
    }
    if (header.typ !== SIGN_APPROVAL_TYPE) throw approvalInvalid(`is not of type ${SIGN_APPROVAL_TYPE}`);
    if (typeof header.alg !== 'string' || !this.options.algorithms.includes(header.alg)) {
      throw approvalInvalid('is signed with an algorithm that is not accepted');
    }
    let approval: unknown;
    try {
      const verified = await compactVerify(jws, keys.resolve, { algorithms: [...this.options.algorithms] });
      approval = JSON.parse(Buffer.from(verified.payload).toString('utf8'));
    } catch (err) {
      if (err instanceof IdentityProviderUnavailableError) throw err;
      throw approvalInvalid("does not verify with the issuer's keys");
    }
    if (!approval || typeof approval !== 'object' || Array.isArray(approval)) {
      throw approvalInvalid('payload is not a JSON object');
    }
    return approval as Record<string, unknown>;
  }
}

/** The approval claim's value: standard base64 of a compact JWS (bounded, as the assertion itself). */
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function approvalMissing(): AssertionError {
  return new AssertionError(
    'ASSERTION_APPROVAL_MISSING',
    `the request has a sign message and the ID token carries no sign approval (${USER_SIGNATURE_CLAIM}): ask the identity provider with the sign scope and signRequest`,
  );
}

function approvalInvalid(what: string): AssertionError {
  return new AssertionError('ASSERTION_APPROVAL_INVALID', `the sign approval (userSignature) ${what}`);
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
