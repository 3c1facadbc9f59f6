import { PipelineError } from '../shared/errors';
import { CLIENT_CODES, type ClientCode, type ClientCodeName } from '../shared/client-codes';
import { clientFailureOf, type ClientFailure } from '../shared/client-failures';

/**
 * The errors a CSC client sees: the OAuth 2.0 error codes (RFC 6749 5.2, RFC 6750 3.1) the Cloud
 * Signature Consortium API v2 uses in its `{ "error", "error_description" }` answers, each with its HTTP
 * status. The door's wire shaping only: an exception becomes a client code by the core's one mapping
 * (clientFailureOf), and the client code a CSC error by `cscErrorFor` (cscErrorOf does both).
 */
export const CSC_ERRORS = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  unsupported_response_type: 400,
  invalid_scope: 400,
  insufficient_scope: 403,
  invalid_token: 401,
  access_denied: 403,
  not_found: 404,
  method_not_allowed: 405,
  too_many_requests: 429,
  server_error: 500,
  temporarily_unavailable: 503,
} as const;

export type CscErrorCode = keyof typeof CSC_ERRORS;

/** A refusal in the CSC error form. Descriptions name rules and fields only, never a token or a digest. */
export class CscError extends PipelineError {
  public override name = 'CscError';
  declare public readonly code: CscErrorCode;

  public constructor(code: CscErrorCode, description: string) {
    super(description, code);
  }

  public get status(): number {
    return CSC_ERRORS[this.code];
  }

  /** The body of the answer: `{ error, error_description }`. */
  public toJSON(): { error: CscErrorCode; error_description: string } {
    return { error: this.code, error_description: this.message };
  }
}

/**
 * The service's client codes (the pipeline's refusals and failed requests) as CSC errors: the one
 * mapping. The identity assertion's refusals are the citizen's login not being acceptable
 * (`access_denied`); a refusal of the request's shape is `invalid_request`; capacity is
 * `too_many_requests` or `temporarily_unavailable`; a failed signature `server_error`.
 */
export function cscErrorFor(code: ClientCodeName | string): CscErrorCode {
  if (code.startsWith('ASSERTION_') || code === 'SIGN_MESSAGE_INVALID' || code === 'CLIENT_NOT_TRUSTED') {
    return code === 'SIGN_MESSAGE_INVALID' ? 'invalid_request' : 'access_denied';
  }
  switch (code) {
    case 'INVALID_JSON':
    case 'VALIDATION_FAILED':
    case 'SIGNER_NOT_ALLOWED':
    case 'IDENTITY_ASSERTION_REQUIRED':
    case 'REQUEST_ID_REQUIRED':
    case 'PAYLOAD_TOO_LARGE':
    case 'UNSUPPORTED_MEDIA_TYPE':
    case 'REQUEST_ID_CONFLICT':
    case 'CREDENTIAL_UNKNOWN':
    case 'CREDENTIAL_USED':
    case 'CREDENTIAL_EXPIRED':
    case 'CREDENTIAL_REVOKED':
      // The last four: a login's own credential that serves no more (used, expired, revoked, not this
      // client's).
      return 'invalid_request';
    case 'UNAUTHENTICATED':
    case 'FORBIDDEN':
      return 'invalid_client';
    case 'NOT_FOUND':
    case 'ROUTE_NOT_FOUND':
      return 'not_found';
    case 'METHOD_NOT_ALLOWED':
      return 'method_not_allowed';
    case 'THROTTLED':
    case 'QUOTA_EXCEEDED':
    case 'POOL_EMPTY':
    case 'CLIENT_SHARE_EXCEEDED':
      return 'too_many_requests';
    case 'SERVICE_UNAVAILABLE':
    case 'IDENTITY_PROVIDER_UNAVAILABLE':
    case 'KEYS_UNAVAILABLE':
      return 'temporarily_unavailable';
    case 'SIGNER_MISMATCH':
    case 'REQUEST_UNKNOWN':
    case 'IDENTITY_EVIDENCE_MISSING':
    case 'INVALID_IDENTITY':
      return 'access_denied';
    default: {
      // Any other refusal of the client's own making (by its HTTP status) is a bad request; the rest,
      // failed signatures included, the service's.
      const status = (CLIENT_CODES as Readonly<Record<string, ClientCode>>)[code]?.status;
      return status !== undefined && status < 500 ? 'invalid_request' : 'server_error';
    }
  }
}

/** A failure as the core's one mapping tells it, in the CSC form: its code mapped, its message. */
function cscErrorFrom(failure: ClientFailure): CscError {
  return new CscError(cscErrorFor(failure.code), failure.message);
}

/**
 * Any error as the CSC door answers it: its own OAuth refusals (CscError) as they are, anything else
 * through the core's one mapping (an unexpected failure is `server_error`, "internal error").
 */
export function cscErrorOf(err: unknown): CscError {
  return err instanceof CscError ? err : cscErrorFrom(clientFailureOf(err));
}
