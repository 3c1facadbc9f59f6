/**
 * Errors of XML parsing, canonicalization and signatures. Messages name the rule that failed, never the
 * document's content (a sign request or an assertion carries personal data).
 */
import { PipelineError, type PipelineErrorOptions } from '@pipeline/core/shared';

/** Not well-formed XML, a DOCTYPE (entity expansion is refused), or larger than the cap. */
export class XmlMalformedError extends PipelineError {
  public override readonly name = 'XmlMalformedError';
  public constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'XML_MALFORMED', options);
  }
}

/** A canonicalization, transform, digest or signature algorithm outside the allow list. */
export class XmlAlgorithmNotSupportedError extends PipelineError {
  public override readonly name = 'XmlAlgorithmNotSupportedError';
  public constructor(message: string) {
    super(message, 'XML_ALGORITHM_NOT_SUPPORTED');
  }
}

/**
 * The XML signature is missing, misplaced, references something other than what it must, or does not
 * verify with any of the trusted certificates.
 */
export class XmlSignatureInvalidError extends PipelineError {
  public override readonly name = 'XmlSignatureInvalidError';
  public constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'XML_SIGNATURE_INVALID', options);
  }
}

/** A DSS-Ext XML sign task outside the framework's profile (ELN-0609 §4.1). */
export class BadXadesTaskError extends PipelineError {
  public override readonly name = 'BadXadesTaskError';
  public constructor(message: string) {
    super(message, 'SIGN_TASK_INVALID');
  }
}
