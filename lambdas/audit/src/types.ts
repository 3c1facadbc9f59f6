import type { AuditSigner } from '../../core/src';

export interface AuditLogOptions {
  /** Number of hash chains writers spread over. Keep it fixed for a table's lifetime. */
  readonly chains: number;
  /** The chain this instance appends to; default a random one, changed after a lost race. */
  readonly chain?: number;
  /** Checkpoint after this many events appended by this instance; 0 = only on demand. */
  readonly checkpointEvery?: number;
  /** Signs checkpoints (the audit key in the HSM). Without it checkpoint() throws AuditNotReadyError. */
  readonly signer?: AuditSigner;
  /** Transaction attempts per batch when appenders race on one chain head. */
  readonly maxAttempts?: number;
  /** Most events committed in one entry (one Merkle tree). */
  readonly maxBatch?: number;
  /** Epoch ms. */
  readonly clock?: () => number;
  readonly random?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Failures of automatic (background) checkpoints; they never fail an append. */
  readonly onBackgroundError?: (err: unknown) => void;
}
