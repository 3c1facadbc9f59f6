/**
 * The CSC door's error shape: every refusal is a CscError (core/csc: the OAuth 2.0 codes and the one
 * mapping of the pipeline's client codes, cscErrorFor), answered as `{ error, error_description }` with
 * its status and, for a client or an access token, its authentication challenge.
 */
import type { Refused } from '@pipeline/api';
import { CscError, cscErrorFor } from '@pipeline/core/csc';
import { json, type HttpResult } from '@pipeline/doors';

export { CscError };

export function refusal(err: CscError): HttpResult {
  return json(err.status, err.toJSON(), challengeOf(err));
}

/** The intake's refusal (or a failed sign request's error) as the CSC error cscErrorFor maps it to. */
export function intakeRefusal(error: Refused['error'] | { code: string; message?: string }): CscError {
  return new CscError(cscErrorFor(error.code), error.message ?? error.code);
}

/**
 * The authentication challenge of a refusal: Basic for a client (RFC 6749 5.2), Bearer with the error for
 * an access token (RFC 6750 3: every 401 and 403 of a resource method).
 */
function challengeOf(err: CscError): Record<string, string> {
  if (err.code === 'invalid_client') return { 'WWW-Authenticate': 'Basic realm="csc"' };
  if (err.code !== 'invalid_token' && err.code !== 'insufficient_scope') return {};
  // RFC 6750 3: the description is a quoted-string of printable ASCII without '"' and '\\'.
  const description = err.message.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, ' ');
  return {
    'WWW-Authenticate': `Bearer realm="csc", error="${err.code}", error_description="${description}"`,
  };
}
