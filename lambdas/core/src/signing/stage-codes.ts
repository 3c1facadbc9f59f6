/**
 * A failed stage as the client sees it: the stored error's code and message. The one mapping of a signing
 * stage's failure to a client code.
 */
import type { FailureCode } from '../shared/client-codes';
import { clientCodeOf } from '../shared/client-failures';
import { errorCode } from '../shared/errors';
import type { RequestError, SigningStage } from './sign-request';

/** The default error code of each stage, used when the cause has no code of its own. */
export const STAGE_CODES: Readonly<Record<SigningStage, FailureCode>> = {
  claim: 'POOL_CLAIM_FAILED',
  unwrap: 'KEY_UNWRAP_FAILED',
  keygen: 'KEYGEN_FAILED',
  sign: 'HSM_SIGN_FAILED',
  csr: 'CSR_FAILED',
  destroy: 'KEY_DESTROY_FAILED',
  issue: 'CERTIFICATE_ISSUE_FAILED',
  container: 'CONTAINER_FAILED',
  timestamp: 'TSA_UNAVAILABLE',
  validation: 'VALIDATION_DATA_UNAVAILABLE',
  audit: 'AUDIT_WRITE_FAILED',
};

/**
 * A stored error: the cause's own client code when it has one (a CA refusal, an assertion code, a PKCS#11
 * `CKR_*` name; the service's one mapping, `clientCodeOf`), else the stage's; the message is the stage and
 * the cause's name/code, nothing else.
 */
export function requestErrorFor(stageName: SigningStage, cause: unknown): RequestError {
  const code = (clientCodeOf(cause) as FailureCode | undefined) ?? STAGE_CODES[stageName];
  const name = cause instanceof Error ? cause.name : 'error';
  return { code, message: `${stageName} failed: ${name} (${errorCode(cause)})` };
}
