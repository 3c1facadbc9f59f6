/**
 * What the e-service is told, in one place: the pipeline's client codes and the identity provider's
 * refusals as the framework's statuses (the DSS_STATUS registry of @pipeline/dss), and the requests no
 * response may be posted for.
 */
import { PipelineError, type PipelineErrorOptions } from '@pipeline/core/shared';
import type { DssStatus } from '@pipeline/dss';
import type { LoginRefusal } from './types';

/** A failure answered with an HTML page and nothing posted: its origin or its login state is not established. */
export class DssDoorPageError extends PipelineError {
  public override readonly name = 'DssDoorPageError';
  public constructor(
    public readonly statusCode: 400 | 404,
    message: string,
    options?: PipelineErrorOptions,
  ) {
    super(message, 'DSS_DOOR_REFUSED', options);
  }
}

type Refusal = Exclude<DssStatus, 'SUCCESS'>;

/** The pipeline's client codes (assertion checks at the API and the CA) that have a status of their own. */
const STATUS_OF_CODE: Readonly<Record<string, Refusal>> = {
  SIGNER_MISMATCH: 'USER_MISMATCH',
  ASSERTION_APPROVAL_MISSING: 'SIGN_MESSAGE_ERROR',
  ASSERTION_APPROVAL_MISMATCH: 'SIGN_MESSAGE_ERROR',
  ASSERTION_LOA_INSUFFICIENT: 'UNSUPPORTED_LOA',
  ASSERTION_REPLAYED: 'SECURITY_VIOLATION',
  ASSERTION_EXPIRED: 'AUTHN_FAILED',
  ASSERTION_BINDING_MISMATCH: 'AUTHN_FAILED',
};

/** A client code's status: its own, else any assertion refusal is a failed login, the rest our failure. */
export function statusOfCode(code: string): Refusal {
  const own = STATUS_OF_CODE[code];
  if (own) return own;
  if (code.startsWith('ASSERTION_') || code === 'CLIENT_NOT_TRUSTED') return 'AUTHN_FAILED';
  return 'GENERAL_ERROR';
}

/** The identity provider's second-level status (ELN-0602 §6.4) as the SignResponse's. */
export const STATUS_OF_LOGIN_REFUSAL: Readonly<Record<LoginRefusal, Refusal>> = {
  cancel: 'USER_CANCEL',
  fraud: 'SECURITY_VIOLATION',
  'unknown-principal': 'USER_MISMATCH',
  'no-authn-context': 'UNSUPPORTED_LOA',
  failed: 'AUTHN_FAILED',
};
