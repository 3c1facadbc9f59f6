/**
 * Every refusal of the API is an ApiError: an HTTP status, a machine-readable code and a human message,
 * rendered as `{ "error": { "code", "message" } }`. Messages never carry personal data or stack traces.
 */
export class ApiError extends Error {
  public override readonly name: string = 'ApiError';
  public constructor(
    public readonly status: number,
    public readonly code: string,
    message: string,
    public readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export class ValidationError extends ApiError {
  public override readonly name = 'ValidationError';
  public constructor(message: string) {
    super(400, 'VALIDATION_FAILED', message);
  }
}

export class NotFoundError extends ApiError {
  public override readonly name = 'NotFoundError';
  public constructor(message = 'no such sign request') {
    super(404, 'NOT_FOUND', message);
  }
}

export class ConflictError extends ApiError {
  public override readonly name = 'ConflictError';
  public constructor(message: string) {
    super(409, 'REQUEST_ID_CONFLICT', message);
  }
}

export class UnauthenticatedError extends ApiError {
  public override readonly name = 'UnauthenticatedError';
  public constructor() {
    super(401, 'UNAUTHENTICATED', 'missing or invalid credentials');
  }
}

export class ThrottledError extends ApiError {
  public override readonly name = 'ThrottledError';
  public constructor(code: string, message: string, retryAfterSeconds: number) {
    super(429, code, message, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export class DependencyError extends ApiError {
  public override readonly name = 'DependencyError';
  public constructor(dependency: string) {
    super(503, 'SERVICE_UNAVAILABLE', `${dependency} is unavailable, retry later`, { 'Retry-After': '1' });
  }
}

/** An identity assertion was refused: its own code per reason; a replay is a conflict. */
export class AssertionRefusedError extends ApiError {
  public override readonly name = 'AssertionRefusedError';
  public constructor(code: string, message: string) {
    super(code === 'ASSERTION_REPLAYED' ? 409 : code === 'CLIENT_NOT_TRUSTED' ? 403 : 400, code, message);
  }
}
