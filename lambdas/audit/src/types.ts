import type { AuditAnchorStore, AuditSigner } from '@pipeline/core/audit';

export interface AuditLogOptions {
  /** Number of hash chains writers spread over. Keep it fixed for a table's lifetime. */
  readonly chains: number;
  /** The chain this instance appends to; default a random one, changed after a lost race. */
  readonly chain?: number;
  /** Signs checkpoints and heads (the audit key in the HSM). Without it checkpoint() throws AuditNotReadyError. */
  readonly signer?: AuditSigner;
  /** Sign each entry as its chain's head before handing out receipts (default true when there is a signer). */
  readonly signHeads?: boolean;
  /** Where checkpoints are copied outside the table. */
  readonly anchors?: AuditAnchorStore;
  /** Transaction attempts per batch when appenders race on one chain head. */
  readonly maxAttempts?: number;
  /** Most events committed in one entry (one Merkle tree). */
  readonly maxBatch?: number;
  /** Epoch ms. */
  readonly clock?: () => number;
  readonly random?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}
