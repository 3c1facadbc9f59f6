/**
 * What every stage of one attempt shares: the request and its ports, the stage runner (timed, retried when
 * safe, failures tagged with the stage), the audit buffer and the one-time key; and the attempt's endings
 * that are not failures of a stage (AttemptEnd), returned rather than thrown.
 */
import type { FailureCode } from '../shared/client-codes';
import { PipelineError } from '../shared/errors';
import { DEFAULT_RETRY_POLICY, retryTransient } from '../shared/retry';
import type { AuditBuffer } from './audit-buffer';
import type { SignDocument } from './documents';
import type { OneTimeKey } from './one-time-key';
import type { StoredSignRequest } from './request-state';
import type { RequestError, SigningStage } from './sign-request';
import type { ProcessOptions, SigningDeps } from './signing-deps';
import { STAGE_CODES } from './stage-codes';

/** A stage failed: the stage, with the failure as its cause. Never leaves the attempt. */
export class StageError extends PipelineError {
  public override name = 'StageError';
  public constructor(
    public readonly stage: SigningStage,
    cause: unknown,
  ) {
    super(`${stage} failed`, STAGE_CODES[stage], { cause });
  }
}

/**
 * The request ends without a signature for a reason of its own (not a stage failure), or, under
 * `fallback` with no key yet, is handed back to the queue.
 */
export type AttemptEnd =
  | {
      readonly ended: 'failed';
      readonly error: RequestError;
      readonly retryAfterSeconds?: number;
    }
  | { readonly ended: 'handed-back' };

/** The request fails with a code of its own (retryAfterSeconds: when a retry may find a key). */
export function failedWith(code: FailureCode, message: string, retryAfterSeconds?: number): AttemptEnd {
  return {
    ended: 'failed',
    error: { code, message },
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  };
}

/** Whether a stage's result is the attempt's end rather than what the next stage works on. */
export function isEnd(value: object | undefined): value is AttemptEnd {
  return value !== undefined && 'ended' in value;
}

/** Stages safe to repeat after a transient failure (see shared/retry.ts); claim and audit retry on their own. */
const RETRIED: ReadonlySet<SigningStage> = new Set(['unwrap', 'keygen', 'sign', 'csr', 'destroy', 'issue']);

/** Runs the stages of one attempt and sums their durations (over retries and discarded keys). */
export class StageRunner {
  public readonly durations: Partial<Record<SigningStage, number>> = {};

  public constructor(
    private readonly deps: SigningDeps,
    private readonly clock: () => number,
  ) {}

  /** Runs one stage: timed, retried when safe, and any failure tagged with the stage (StageError). */
  public async run<T>(name: SigningStage, fn: () => Promise<T>): Promise<T> {
    const t0 = this.clock();
    try {
      if (!RETRIED.has(name)) return await fn();
      return await retryTransient(fn, this.deps.retry ?? DEFAULT_RETRY_POLICY, {
        sleep: this.deps.sleep,
        onRetry: (err, attempt) => this.deps.onRetry?.(name, err, attempt),
      });
    } catch (err) {
      throw new StageError(name, err);
    } finally {
      this.durations[name] = (this.durations[name] ?? 0) + this.clock() - t0;
    }
  }
}

/** What an attempt signs: every request is a list of documents inside the service. */
export interface DocumentPlan {
  /** Defaults applied: a `cms` document has its level and minimum level. */
  readonly documents: readonly SignDocument[];
  /**
   * A request with the single document's fields (a list of one): its result is the record's own
   * fields, its audit event and messages name no document index, and a `cms` one needs its profile.
   */
  readonly single: boolean;
}

/** One attempt at one request, as its stages see it. */
export interface AttemptContext {
  readonly deps: SigningDeps;
  readonly record: StoredSignRequest;
  readonly attemptId: string;
  readonly clock: () => number;
  readonly options: ProcessOptions;
  /** The request's documents: its `documents`, or its single document as a list of one. */
  readonly plan: DocumentPlan;
  readonly stage: <T>(name: SigningStage, fn: () => Promise<T>) => Promise<T>;
  readonly audit: AuditBuffer;
  readonly key: OneTimeKey;
}
