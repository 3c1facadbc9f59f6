/**
 * The sign request state machine, as pure rules: which transitions exist, and what a (re)delivered
 * message should do given the stored record. The repository enforces the same rules with conditional
 * writes, so two deliveries racing cannot both act.
 *
 *   received --start--> signing --complete--> signed
 *       |                 |  ^ \--fail------> failed
 *       \--fail-----------+  |
 *                   takeover (lease expired: the previous attempt crashed)
 *
 * Crash recovery: each attempt writes a fresh attemptId and a lease (leaseUntil) when it enters
 * `signing`; only the holder of that attemptId may complete or fail the request. A delivery that finds
 * `signing` with a live lease backs off (another worker is on it); one that finds the lease expired takes
 * the request over with a new attemptId (the old attempt's key died with its process: a claimed pool key
 * is already deleted, so it is never used twice).
 */
import type { AuditReceipt } from '../audit';
import type { SignatureLevel } from '../shared/formats';
import type {
  DocumentResult,
  RequestError,
  RequestStatus,
  ReservedKey,
  SignRequestRecord,
  StageDurations,
  StoredValidationData,
} from './sign-request';

/** The stored record: the shared SignRequestRecord plus the attempt bookkeeping of the signer. */
export interface StoredSignRequest extends SignRequestRecord {
  /** Id of the attempt that owns the `signing` state. */
  readonly attemptId?: string;
  /** Epoch ms until which that attempt is presumed alive. */
  readonly leaseUntil?: number;
  /** Number of attempts that entered `signing` (1 normally; more after crash take-overs). */
  readonly attempts?: number;
  /** Fresh messages the reconciler sent for it (see reconcile.ts), and when it last did. */
  readonly requeues?: number;
  readonly requeuedAt?: number;
}

const TRANSITIONS: Readonly<Record<RequestStatus, readonly RequestStatus[]>> = {
  received: ['signing', 'failed'],
  // signing -> signing is a take-over of a crashed attempt (new attemptId).
  signing: ['signing', 'signed', 'failed'],
  signed: [],
  failed: [],
};

export function isTerminal(status: RequestStatus): boolean {
  return TRANSITIONS[status].length === 0;
}

/** What one delivery of a request id should do. */
export type DeliveryDecision =
  | { readonly kind: 'replay' }
  | { readonly kind: 'start' }
  | { readonly kind: 'takeover'; readonly staleAttemptId: string | undefined }
  | { readonly kind: 'busy'; readonly retryAfterMs: number };

export function decideDelivery(record: StoredSignRequest, nowMs: number): DeliveryDecision {
  switch (record.status) {
    case 'signed':
    case 'failed':
      return { kind: 'replay' };
    case 'received':
      return { kind: 'start' };
    case 'signing': {
      const leaseUntil = record.leaseUntil ?? 0;
      if (leaseUntil > nowMs) return { kind: 'busy', retryAfterMs: leaseUntil - nowMs };
      return { kind: 'takeover', staleAttemptId: record.attemptId };
    }
  }
}

/** TTL (epoch seconds) of a request record received at receivedAtMs. */
export function requestExpiresAt(receivedAtMs: number, retentionSeconds: number): number {
  return Math.floor(receivedAtMs / 1000) + retentionSeconds;
}

/** The result a successful attempt stores. */
export interface SignedResult {
  /** Base64: the signature over the client's digest (`raw`) ... */
  readonly signature?: string;
  /** ... or the CMS container (`cms`). */
  readonly cms?: string;
  /**
   * A request with `documents`: every document's result, in input order (the store keeps them in items
   * of their own and assembles them on read as the record's documentResults).
   */
  readonly documentResults?: readonly DocumentResult[];
  /** When the documents' results expire (epoch seconds): the record's expiresAt. */
  readonly resultsExpireAt?: number;
  /** `cms`: the level reached, and its validation data from B-LT. */
  readonly reachedLevel?: SignatureLevel;
  readonly validationData?: StoredValidationData;
  /** A one-time credential's creation: its key, wrapped, kept for its one use (nothing signed). */
  readonly reservedKey?: ReservedKey;
  readonly certificate: string;
  readonly certificateSerial: string;
  readonly receipt?: AuditReceipt;
  readonly chain: readonly string[];
  readonly pooledKey: boolean;
  readonly keyAcquiredAt: number;
  readonly finishedAt: number;
  readonly stageMs: StageDurations;
  readonly discardedKeys: number;
}

export interface FailedResult {
  readonly error: RequestError;
  readonly pooledKey?: boolean;
  readonly keyAcquiredAt?: number;
  readonly finishedAt: number;
  readonly stageMs?: StageDurations;
  readonly discardedKeys?: number;
}

export interface StartAttempt {
  readonly attemptId: string;
  readonly startedAt: number;
  readonly leaseUntil: number;
  /**
   * The attempt being taken over: the request must be `signing` under that attemptId with its lease
   * expired by startedAt. Undefined: the request must still be `received`.
   */
  readonly takeOverFrom?: { readonly attemptId: string | undefined };
}

/**
 * The request store (implemented by the DynamoDB RequestRepository). Transitions return the updated
 * record, or undefined when their condition did not hold (another delivery got there first).
 */
export interface SignRequestStore {
  get(id: string): Promise<StoredSignRequest | undefined>;
  startAttempt(id: string, attempt: StartAttempt): Promise<StoredSignRequest | undefined>;
  complete(id: string, attemptId: string, result: SignedResult): Promise<StoredSignRequest | undefined>;
  fail(id: string, attemptId: string, result: FailedResult): Promise<StoredSignRequest | undefined>;
  /**
   * Ends the attempt's lease now, leaving the request `signing` for the next delivery to take over (an
   * attempt that found no key hands its message back). False when the attempt no longer owns it. Without
   * it, such an attempt fails the request POOL_EMPTY.
   */
  release?(id: string, attemptId: string, now: number): Promise<boolean>;
  /** Removes a used one-time credential's wrapped key from its creating request (if it is still that key). */
  dropReservedKey?(id: string, keyId: string): Promise<void>;
}
