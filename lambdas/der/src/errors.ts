/**
 * Errors of CSR parsing and verification. Each has a machine-readable `code`; messages never carry the
 * CSR's content (its subject could be personal data).
 */
import { PipelineError, type ClientCodeName, type PipelineErrorOptions } from '@pipeline/core/shared';

/** Failures of the PKI encoders and parsers: each subclass sets its own code. */
export abstract class PkiError extends PipelineError {
  public constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'PKI_ERROR', options);
  }
}

/** Not a well-formed DER PKCS#10 request, or one with an unsupported key or signature algorithm. */
export class BadCsrError extends PkiError {
  public override readonly name = 'BadCsrError';
  public override readonly code = 'BAD_CSR' satisfies ClientCodeName;
}

/** The CSR's signature does not verify with its own public key: no proof of possession. */
export class CsrSignatureInvalidError extends PkiError {
  public override readonly name = 'CsrSignatureInvalidError';
  public override readonly code = 'CSR_SIGNATURE_INVALID' satisfies ClientCodeName;
  public constructor() {
    super('the CSR signature does not verify with the CSR public key');
  }
}

/** A DSS-Ext sign task's bytes break a rule of the framework's profile (ELN-0609 §4.1). */
export class BadSignTaskError extends PkiError {
  public override readonly name = 'BadSignTaskError';
  public override readonly code = 'SIGN_TASK_INVALID' satisfies ClientCodeName;
}
