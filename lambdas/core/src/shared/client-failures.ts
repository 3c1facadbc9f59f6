/**
 * The one mapping from an exception to what a client is told: a code of the registry (client-codes.ts),
 * the HTTP status of a call refused with it, and a message for people. Every door and function answers
 * through it (the API's `{ error: { code, message } }`, the CSC door's `{ error, error_description }`, the
 * CA function's refusals) and shapes only the wire form. The rules:
 *
 * - a PipelineError whose code is the registry's (or that names its `clientCode`) is `refused`: its
 *   code, the code's status, its own message (named errors carry no secret and no personal data:
 *   shared/errors.ts);
 * - unless it is transient or its code says "retry later" (RETRY_CODES): that, and an SDK or network
 *   failure of a backing service, is `unavailable`, worth a retry (fixed words and a Retry-After where
 *   set: UNAVAILABLE_WORDS, RETRY_AFTER_SECONDS);
 * - anything else is `internal`: INTERNAL_ERROR with the registry's message, reported by the caller.
 */
import { CLIENT_CODES, messageOf, type ClientCode, type ClientCodeName } from './client-codes';
import { errorCode, isTransient, PipelineError } from './errors';

/** How a failure ends for the client: refused as sent, worth a retry, or a fault of the service. */
type FailureKind = 'refused' | 'unavailable' | 'internal';

export interface ClientFailure {
  readonly kind: FailureKind;
  readonly code: ClientCodeName;
  /**
   * The code's HTTP status; for a code only failed requests carry, by kind: refused 400 (a CA refusal,
   * ASSERTION_STALE), unavailable 503, internal 500.
   */
  readonly status: number;
  readonly message: string;
  /** Seconds a client should wait before it retries (the Retry-After of an HTTP answer). */
  readonly retryAfterSeconds?: number;
}

/**
 * Fixed words of an unavailable service where its errors describe their cause for the logs (a token
 * endpoint's status, a fetch's error), and how long a client should wait.
 */
const UNAVAILABLE_WORDS: Partial<Record<ClientCodeName, string>> = {
  IDENTITY_PROVIDER_UNAVAILABLE: 'the identity provider keys are unavailable, retry later',
};
const RETRY_AFTER_SECONDS: Partial<Record<ClientCodeName, number>> = {
  IDENTITY_PROVIDER_UNAVAILABLE: 5,
  SERVICE_UNAVAILABLE: 1,
};

/** Codes whose answer means "retry later": a caller treats an answer with one as transient. */
const RETRY_CODES: ReadonlySet<string> = new Set<ClientCodeName>([
  'SERVICE_UNAVAILABLE',
  'IDENTITY_PROVIDER_UNAVAILABLE',
  'KEYS_UNAVAILABLE',
  'CA_UNAVAILABLE',
  'TSA_UNAVAILABLE',
  'VALIDATION_DATA_UNAVAILABLE',
]);

const DEFAULT_STATUS: Readonly<Record<FailureKind, number>> = {
  refused: 400,
  unavailable: 503,
  internal: 500,
};

function isClientCode(code: unknown): code is ClientCodeName {
  return typeof code === 'string' && Object.hasOwn(CLIENT_CODES, code);
}

/** True for a code an answer carries when the same call may succeed later (see RETRY_CODES). */
export function isRetryCode(code: string): boolean {
  return RETRY_CODES.has(code);
}

/** The registry code a client sees for an error: its own code, or the `clientCode` it names. */
function registeredCodeOf(err: PipelineError): ClientCodeName | undefined {
  if (isClientCode(err.code)) return err.code;
  return err.clientCode;
}

export function clientFailureOf(err: unknown): ClientFailure {
  const code = err instanceof PipelineError ? registeredCodeOf(err) : undefined;
  if (code !== undefined && !isTransient(err) && !isRetryCode(code)) {
    return { kind: 'refused', code, status: statusOf(code, 'refused'), message: (err as Error).message };
  }
  const unavailable = code ?? (isDependencyFailure(err) ? 'SERVICE_UNAVAILABLE' : undefined);
  if (unavailable !== undefined) {
    const retryAfterSeconds = RETRY_AFTER_SECONDS[unavailable];
    return {
      kind: 'unavailable',
      code: unavailable,
      status: statusOf(unavailable, 'unavailable'),
      message:
        UNAVAILABLE_WORDS[unavailable] ??
        (code !== undefined ? (err as Error).message : messageOf(unavailable)),
      ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
    };
  }
  return { kind: 'internal', code: 'INTERNAL_ERROR', status: 500, message: messageOf('INTERNAL_ERROR') };
}

/**
 * The code a failed request may carry from the error that failed it: its own when a client may see it
 * (one of the registry's, or a PKCS#11 `CKR_*` name), else undefined (the caller's default for the stage).
 */
export function clientCodeOf(err: unknown): string | undefined {
  const own = (err as { code?: unknown } | undefined)?.code;
  if (typeof own !== 'string' || errorCode(err) !== own) return undefined;
  return isClientCode(own) || /^CKR_[A-Z0-9_]+$/.test(own) ? own : undefined;
}

function statusOf(code: ClientCodeName, kind: FailureKind): number {
  return (CLIENT_CODES[code] as ClientCode).status ?? DEFAULT_STATUS[kind];
}

/** SDK and network failures of DynamoDB, SQS or Lambda: the caller should retry, it is not their fault. */
function isDependencyFailure(err: unknown): boolean {
  const e = err as { $metadata?: unknown; code?: string; name?: string; cause?: { code?: string } };
  if (!e || typeof e !== 'object') return false;
  const code = e.code ?? e.cause?.code ?? '';
  return (
    e.$metadata !== undefined ||
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND'].includes(code) ||
    e.name === 'TimeoutError'
  );
}
