import type { ClientCodeName } from './client-codes';

/**
 * The one error model: every named error of the service is a PipelineError with a machine-readable
 * `code`, a `transient` flag (true: the same call may succeed shortly, so a bounded retry is worth it)
 * and, when it wraps another failure, that failure as its standard `cause`. Messages carry ids, codes and
 * the names of rules or fields only: never a PIN, a digest, a token or anything about the signer.
 *
 * Callers recognise errors with `instanceof` or by `transient`, never by class-name strings.
 */
export interface PipelineErrorOptions {
  /** The failure this one wraps (kept out of messages; loggers may print it). */
  readonly cause?: unknown;
  /** True when retrying the same call may succeed (capacity, a lost session, an unreachable service). */
  readonly transient?: boolean;
  /**
   * The registry code a client sees for this error when its own code is internal (see
   * client-failures.ts): a refusal whose cause the client is not told.
   */
  readonly clientCode?: ClientCodeName;
}

export class PipelineError extends Error {
  public override name = 'PipelineError';
  public readonly transient: boolean;
  public readonly clientCode?: ClientCodeName;

  public constructor(
    message: string,
    public readonly code: string,
    options: PipelineErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.transient = options.transient ?? false;
    if (options.clientCode !== undefined) this.clientCode = options.clientCode;
  }
}

/**
 * An error whose code a client sees (an API refusal, a failed request's error, a CA refusal): its code is
 * one of the registry's (client-codes.ts), which the compiler holds it to. A family of such errors whose
 * subclasses set their own code as a field declares `code: ClientCodeName` on its base instead.
 */
export class ClientVisibleError extends PipelineError {
  declare public readonly code: ClientCodeName;
  public constructor(message: string, code: ClientCodeName, options?: PipelineErrorOptions) {
    super(message, code, options);
  }
}

/** True for failures that say they are worth a retry (`transient: true`, as PipelineErrors carry it). */
export function isTransient(err: unknown): boolean {
  return (err as { transient?: unknown } | undefined)?.transient === true;
}

/** A machine-readable code from anything thrown: its `code` when it is one, else its class name. */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,63}$/.test(code)) return code;
  const name = err instanceof Error ? err.name : '';
  return /^[A-Za-z][A-Za-z0-9]{1,63}$/.test(name) ? name : 'UNKNOWN_ERROR';
}
