/**
 * A failed stage as the client sees it: the stored error's code and message. The one mapping of a signing
 * stage's failure to a client code.
 */
import { CLIENT_CODES, type FailureCode } from '../shared/client-codes';
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
 * A code a failed request may carry from its cause: one of the registry's (a CA refusal, an assertion
 * code) or a PKCS#11 `CKR_*` name; any other internal code stays in the message, behind the stage's code.
 */
function clientVisible(code: string): boolean {
  return Object.hasOwn(CLIENT_CODES, code) || /^CKR_[A-Z0-9_]+$/.test(code);
}

/** A stored error: a code and a message made of the stage and the cause's name/code, nothing else. */
export function requestErrorFor(stageName: SigningStage, cause: unknown): RequestError {
  const causeCode = errorCode(cause);
  const own = (cause as { code?: unknown } | undefined)?.code;
  const code =
    typeof own === 'string' && causeCode === own && clientVisible(own) ? causeCode : STAGE_CODES[stageName];
  const name = cause instanceof Error ? cause.name : 'error';
  return { code, message: `${stageName} failed: ${name} (${causeCode})` };
}
