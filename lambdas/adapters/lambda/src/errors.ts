import { isRetryCode, PipelineError, type PipelineErrorOptions } from '@pipeline/core/shared';

/**
 * The CA function's refusal, with the code and message it answered (bad CSR, finished request, invalid
 * identity...): not worth a retry, but for a code that says "retry later" by the core's one mapping
 * (isRetryCode: the CA's CA_UNAVAILABLE, it could not reach its table or HSM).
 */
export class CertificateRefusedError extends PipelineError {
  public override readonly name = 'CertificateRefusedError';
  public constructor(code: string, message: string) {
    super(message, code, { transient: isRetryCode(code) });
  }
}

/** The CA function could not be reached or crashed: transient, the request may be retried. */
export class CertificateAuthorityUnavailableError extends PipelineError {
  public override readonly name = 'CertificateAuthorityUnavailableError';
  public constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'CA_UNAVAILABLE', { ...options, transient: true });
  }
}

/** The TSA could not be reached or did not give a valid token for what was asked. */
export class TimeStampUnavailableError extends PipelineError {
  public override readonly name = 'TimeStampUnavailableError';
  public constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'TSA_UNAVAILABLE', options);
  }
}

/** The OCSP responder or the published CRLs could not give a new signature's validation data. */
export class ValidationDataUnavailableError extends PipelineError {
  public override readonly name = 'ValidationDataUnavailableError';
  public constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'VALIDATION_DATA_UNAVAILABLE', options);
  }
}
