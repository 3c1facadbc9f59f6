/**
 * The DSS-Ext refusals. A DssRefusal is answered with a signed SignResponse carrying its status; a
 * DssUntrustedRequestError is a request whose origin could not be established (no registered signature, or
 * a return URL not registered), which gets an error page and nothing posted anywhere: posting a signed
 * response to an unverified address would make the service an open redirector.
 */
import { PipelineError, type PipelineErrorOptions } from '@pipeline/core/shared';
import type { DssStatus } from './status';

/** A refusal the e-service learns of in the SignResponse. Messages name the rule, never citizen data. */
export class DssRefusal extends PipelineError {
  public override readonly name = 'DssRefusal';
  public constructor(
    public readonly status: Exclude<DssStatus, 'SUCCESS'>,
    message: string,
    options?: PipelineErrorOptions,
  ) {
    super(message, 'DSS_REFUSED', options);
  }
}

/** A request no response may be posted for: shown to the browser as an error page. */
export class DssUntrustedRequestError extends PipelineError {
  public override readonly name = 'DssUntrustedRequestError';
  public constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'DSS_UNTRUSTED_REQUEST', options);
  }
}
