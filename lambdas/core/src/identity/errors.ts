import { ClientVisibleError, type PipelineErrorOptions } from '../shared/errors';

/**
 * Why an identity assertion was refused. Every code is its own answer to the client; messages name the
 * claim or the check, never a claim's value or the token (they are personal data).
 */
export type AssertionErrorCode =
  | 'IDENTITY_ASSERTION_REQUIRED'
  | 'ASSERTION_MALFORMED'
  | 'ASSERTION_ALGORITHM_NOT_ALLOWED'
  | 'ASSERTION_ISSUER_UNTRUSTED'
  | 'ASSERTION_UNKNOWN_KEY'
  | 'ASSERTION_SIGNATURE_INVALID'
  | 'ASSERTION_AUDIENCE_MISMATCH'
  | 'ASSERTION_EXPIRED'
  | 'ASSERTION_NOT_YET_VALID'
  | 'ASSERTION_AUTH_TOO_OLD'
  | 'ASSERTION_LOA_INSUFFICIENT'
  | 'ASSERTION_BINDING_MISMATCH'
  | 'ASSERTION_CLAIMS_INVALID'
  | 'ASSERTION_REPLAYED'
  /** `iat - auth_time` too large: a token from an existing session, not a login for this signature. */
  | 'ASSERTION_LOGIN_NOT_FRESH'
  /** At the CA: issued longer ago than a request may wait in the queue. */
  | 'ASSERTION_STALE'
  /** The request has a sign message and the ID token carries no sign approval (userSignature). */
  | 'ASSERTION_APPROVAL_MISSING'
  /** The sign approval does not verify, or is not about this login (issuer, subject, nonce, time). */
  | 'ASSERTION_APPROVAL_INVALID'
  /** The sign approval attests another sign message, or other data, than this request's. */
  | 'ASSERTION_APPROVAL_MISMATCH'
  /** A request object from a client that may not vouch for signers (or signed for another client). */
  | 'CLIENT_NOT_TRUSTED'
  /** The assertion names another person than the sign request's Signer (DSS-Ext). */
  | 'SIGNER_MISMATCH';

export class AssertionError extends ClientVisibleError {
  public override readonly name = 'AssertionError';
  declare public readonly code: AssertionErrorCode;
  public constructor(code: AssertionErrorCode, message: string) {
    super(message, code);
  }
}

/** The trusted issuer's keys could not be read (network, parameter store): the client may retry. */
export class IdentityProviderUnavailableError extends ClientVisibleError {
  public override readonly name = 'IdentityProviderUnavailableError';
  public constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'IDENTITY_PROVIDER_UNAVAILABLE', options);
  }
}
