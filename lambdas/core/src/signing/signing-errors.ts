/**
 * Named errors of the signing core and the pool, each with a machine-readable code. Messages carry ids
 * and codes only: never a PIN, a digest, or anything about the signer.
 */
import { PipelineError } from '../shared/errors';

export class SigningError extends PipelineError {
  public override name = 'SigningError';
}

/** No sign request with that id exists (the message references a record that was never written). */
export class RequestNotFoundError extends SigningError {
  public override name = 'RequestNotFoundError';
  public constructor(requestId: string) {
    super(`sign request ${requestId} does not exist`, 'REQUEST_NOT_FOUND');
  }
}

/** Another delivery holds a live lease on the request: retry after retryAfterMs (SQS redelivers). */
export class RequestInProgressError extends SigningError {
  public override name = 'RequestInProgressError';
  public constructor(
    requestId: string,
    public readonly retryAfterMs: number,
  ) {
    super(`sign request ${requestId} is being processed by another attempt`, 'REQUEST_IN_PROGRESS');
  }
}

/**
 * No key for the request yet (the pool of its type is empty and no on-the-fly generation was free): the
 * attempt gave up its lease and hands the message back to the queue, to come back after retryAfterMs
 * (keygen or a finished generation may have a key by then). Not a failure of the request.
 */
export class KeyUnavailableError extends SigningError {
  public override name = 'KeyUnavailableError';
  public constructor(
    requestId: string,
    public readonly retryAfterMs: number,
  ) {
    super(`no key for sign request ${requestId} yet: handed back to the queue`, 'KEY_UNAVAILABLE');
  }
}

/**
 * This attempt lost ownership of the request before it could record its outcome (its lease expired and
 * another attempt took over). Its result is discarded; the owner's outcome stands.
 */
export class AttemptSupersededError extends SigningError {
  public override name = 'AttemptSupersededError';
  public constructor(requestId: string) {
    super(`the attempt on sign request ${requestId} was superseded`, 'ATTEMPT_SUPERSEDED');
  }
}
