/**
 * The signing core's contract: the ports an attempt works through (SigningDeps), its settings, and what
 * a delivery returns (SignOutcome). The attempt itself is in attempt.ts; processSignRequest in signing.ts.
 */
import type { AuditSink, KeyDiscardReason } from '../audit';
import type { CertificateIssuer } from '../pki/certificate-issuer';
import type { CanonicalPublicKey } from '../pki/public-key';
import type { FallbackLimiter } from '../pool/fallback-limiter';
import type { KeySource } from '../pool/key-source';
import type { EmptyPoolPolicy, KeyPoolStore, PoolHsm } from '../pool/pool';
import type { PoolMetrics } from '../pool/pool-metrics';
import type { DigestAlgorithm, KeyType, SignatureAlgorithm } from '../shared/algorithms';
import type { SignatureLevel } from '../shared/formats';
import type { RetryPolicy } from '../shared/retry';
import type { SignerIdentity } from '../identity/types';
import type { SignRequestStore, StoredSignRequest } from './request-state';
import type { SigningStage } from './sign-request';
import type { ContainerBuilder, TimeStamper, ValidationDataSource } from './signature-container';
import type { TaskPreparer } from './sign-task';

/** Builds a PKCS#10 CSR (DER) for the subject, signed through `sign` (implemented by lambdas/der). */
export type CsrBuilder = (input: {
  readonly subject: SignerIdentity;
  readonly keyType: KeyType;
  readonly publicKeySpki: Buffer;
  readonly sign: (
    digest: Buffer,
    options: { digestAlgorithm: DigestAlgorithm; signatureAlgorithm: SignatureAlgorithm },
  ) => Promise<Buffer>;
}) => Promise<Buffer>;

export interface SigningSettings {
  readonly emptyPoolPolicy: EmptyPoolPolicy;
  readonly retryAfterSeconds: number;
  /** How long an attempt owns a request in `signing` before a redelivery may take it over. */
  readonly leaseMs: number;
  /** The profile of this HSM: a pool key wrapped under another profile cannot be unwrapped here. */
  readonly hsmProfile: string;
  /** Pool keys a request may discard (unusable) before it fails; default 3. */
  readonly maxDiscardedKeys?: number;
  /**
   * Pool keys a request may discard because the CA certified them before (copies of used keys: a restored
   * bundle holds up to a bundle's worth), counted apart; default 25.
   */
  readonly maxReplayedKeys?: number;
}

export interface SigningDeps {
  readonly requests: SignRequestStore;
  readonly pool: Pick<KeyPoolStore, 'claim'>;
  readonly hsm: PoolHsm;
  readonly buildCsr: CsrBuilder;
  readonly issuer: CertificateIssuer;
  /** Builds `cms` results; a request for a container fails CONTAINER_UNSUPPORTED without one. */
  readonly buildContainer?: ContainerBuilder;
  /** Updates DSS-Ext sign tasks for the certificate; without it a request with tasks fails. */
  readonly prepareTask?: TaskPreparer;
  /** B-T and up: the TSA; without one, such a request ends at its minimum level or TSA_UNAVAILABLE. */
  readonly timeStamper?: TimeStamper;
  /** B-LT and up: the validation data; without it, B-T or VALIDATION_DATA_UNAVAILABLE. */
  readonly validationData?: ValidationDataSource;
  readonly metrics: PoolMetrics;
  readonly settings: SigningSettings;
  /**
   * The proof-of-possession check of the CSR this attempt built from `publicKeySpki` (the pool record's
   * public key): throws when the CSR's signature does not verify with that key (lambdas/der's
   * verifyOwnCsr, one verify of the info the signer encoded itself).
   */
  readonly verifyCsr?: (csrDer: Buffer, publicKeySpki: Buffer) => unknown;
  /**
   * A stored public key in its canonical encoding (a pool key stored in any other is discarded);
   * default canonicalPublicKey. Injectable for tests whose keys are not real keys.
   */
  readonly canonicalKey?: (spki: Buffer) => CanonicalPublicKey | undefined;
  /** Told of every pool key a request discarded (the audit log records them too). */
  readonly onKeyDiscarded?: (keyId: string, keyType: KeyType, reason: KeyDiscardReason) => void;
  /**
   * The tamper-evident log: each attempt appends what it did to pool keys (claimed, discarded,
   * destroyed) and the signature it made, before its result is stored.
   */
  readonly audit?: AuditSink;
  /** Retries of transient HSM and CA failures; default DEFAULT_RETRY_POLICY. */
  readonly retry?: RetryPolicy;
  /** Told of each transient failure that is retried (for logs). */
  readonly onRetry?: (stage: SigningStage, err: unknown, attempt: number) => void;
  /** Told when a result stays below the level asked for (within the request's minimum level). */
  readonly onLevelLowered?: (reached: SignatureLevel, code: string, err: unknown) => void;
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Bounds on-the-fly generation under the `fallback` policy (per process, per key type); without it
   * every request that finds the pool empty generates at once.
   */
  readonly fallbackLimiter?: FallbackLimiter;
  /**
   * Where keys come from; default keySourceFor(pool, settings.emptyPoolPolicy, fallbackLimiter): the pool,
   * then on the fly or refuse.
   */
  readonly keySource?: KeySource;
  /** Epoch ms. */
  readonly clock?: () => number;
  readonly newAttemptId?: () => string;
}

/** Millisecond durations of the stages of this attempt (absent on a replay). */
export interface StageTimings {
  /** Claim + unwrap, or on-the-fly generation (discarded keys included). */
  readonly acquireKeyMs: number;
  /** The one-time key's signature (over the digest, or over the container's attributes). */
  readonly signMs: number;
  readonly csrMs: number;
  readonly issueMs: number;
  readonly totalMs: number;
}

export type SignOutcome =
  | {
      readonly status: 'signed';
      readonly record: StoredSignRequest;
      /** True when the stored result of an earlier delivery was returned. */
      readonly replayed: boolean;
      readonly stages?: StageTimings;
    }
  | {
      readonly status: 'failed';
      readonly record: StoredSignRequest;
      readonly replayed: boolean;
      /** Set when the pool was empty under the `reject` policy, or no on-the-fly generation was free. */
      readonly retryAfterSeconds?: number;
    };

/** How this delivery stands among the queue's deliveries of the message. */
export interface ProcessOptions {
  /**
   * The queue will not deliver the message again: a request that finds no key ends POOL_EMPTY instead of
   * handing its message back (KeyUnavailableError).
   */
  readonly lastDelivery?: boolean;
  /** On the last delivery: how long the request may wait for an on-the-fly generation (ms). */
  readonly lastChanceWaitMs?: number;
}
