/**
 * The API's own refusals: an ApiError is a code of the client code registry (core CLIENT_CODES) and a
 * human message (the registry's unless a more precise one is given), with the headers of its answer.
 * Like every error, it reaches the client through the core's one mapping (clientFailureOf: the code's
 * status) and errorResponse (`{ "error": { "code", "message" } }`). Messages never carry personal data
 * or stack traces.
 */
import { CLIENT_CODES, PipelineError, type HttpErrorCode } from '@pipeline/core/shared';

export class ApiError extends PipelineError {
  public override readonly name: string = 'ApiError';
  declare public readonly code: HttpErrorCode;
  public constructor(
    code: HttpErrorCode,
    message: string = CLIENT_CODES[code].message,
    public readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message, code);
  }
}

export class ValidationError extends ApiError {
  public override readonly name = 'ValidationError';
  public constructor(message: string) {
    super('VALIDATION_FAILED', message);
  }
}

export class NotFoundError extends ApiError {
  public override readonly name = 'NotFoundError';
  public constructor(message?: string) {
    super('NOT_FOUND', message);
  }
}

export class ConflictError extends ApiError {
  public override readonly name = 'ConflictError';
  public constructor(message: string) {
    super('REQUEST_ID_CONFLICT', message);
  }
}

export class UnauthenticatedError extends ApiError {
  public override readonly name = 'UnauthenticatedError';
  public constructor() {
    super('UNAUTHENTICATED');
  }
}

/** An API key used by another principal than the client it was issued to. */
export class ApiKeyNotYoursError extends ApiError {
  public override readonly name = 'ApiKeyNotYoursError';
  public constructor() {
    super('FORBIDDEN', "the API key is not the caller's");
  }
}

export class ThrottledError extends ApiError {
  public override readonly name = 'ThrottledError';
  public constructor(code: HttpErrorCode, message: string, retryAfterSeconds: number) {
    super(code, message, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export class DependencyError extends ApiError {
  public override readonly name = 'DependencyError';
  public constructor(dependency: string) {
    super('SERVICE_UNAVAILABLE', `${dependency} is unavailable, retry later`, { 'Retry-After': '1' });
  }
}
