/**
 * Named errors of the audit log, each with a machine-readable code. Messages name fields, chains and
 * sequences only: never an event's values (they could be anything a caller passed in by mistake).
 */
import { PipelineError } from '../shared/errors';
export class AuditError extends PipelineError {
  public override name = 'AuditError';
}

/** An event failed validation (wrong type, a field that is not an id or a hash, ...). */
export class AuditEventInvalidError extends AuditError {
  public override name = 'AuditEventInvalidError';
  public constructor(
    public readonly field: string,
    reason: string,
  ) {
    super(`audit event field ${field} ${reason}`, 'AUDIT_EVENT_INVALID');
  }
}

/** A value cannot be encoded canonically (floats, undefined, non-plain objects). */
export class AuditEncodingError extends AuditError {
  public override name = 'AuditEncodingError';
  public constructor(message: string) {
    super(message, 'AUDIT_ENCODING');
  }
}

/** Appending kept losing the race for a chain head: the caller may retry later. */
export class AuditAppendConflictError extends AuditError {
  public override name = 'AuditAppendConflictError';
  public constructor(
    public readonly chain: number,
    attempts: number,
  ) {
    super(`audit chain ${chain}: append lost the race ${attempts} times`, 'AUDIT_APPEND_CONFLICT');
  }
}

/** A checkpoint could not be written (lost the race to a concurrent checkpoint, or signing failed). */
export class AuditCheckpointError extends AuditError {
  public override name = 'AuditCheckpointError';
  public constructor(message: string) {
    super(message, 'AUDIT_CHECKPOINT_FAILED');
  }
}

/** The audit log is not usable as configured (no audit key on the token, no public key to verify with). */
export class AuditNotReadyError extends AuditError {
  public override name = 'AuditNotReadyError';
  public constructor(message: string) {
    super(message, 'AUDIT_NOT_READY');
  }
}

/**
 * The chain heads moved backwards from the last checkpoint (a head set back, or another entry where the
 * checkpoint recorded one): someone rewrote the table. The checkpointer signs nothing over them.
 */
export class AuditHeadsRewoundError extends AuditError {
  public override name = 'AuditHeadsRewoundError';
  public constructor(
    public readonly chains: readonly number[],
    checkpoint: number,
  ) {
    super(
      `audit chains ${chains.join(', ')} moved backwards from checkpoint ${checkpoint}: not signed`,
      'AUDIT_HEADS_REWOUND',
    );
  }
}
