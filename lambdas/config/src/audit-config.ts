import { int, integer, objectTarget, str, type IntegerRule } from './readers';
import type { Env, ObjectTarget } from './types';
import { ENV } from './env-names';

/** Tamper-evident audit log settings (the table name comes from AUDIT_TABLE_NAME, see TABLES.audit). */
export interface AuditConfig {
  /** Hash chains events are spread over by entity id; fixed for a table's lifetime. */
  readonly chains: number;
  /** The checkpointer signs a checkpoint this often while chain heads move (and anchors it). */
  readonly checkpointIntervalSeconds: number;
  /** Where checkpoints are copied outside the table (write-once); unset = nowhere. */
  readonly anchorTarget?: ObjectTarget;
  /** How old an entry may be before `audit verify` wants an anchored checkpoint to cover it. */
  readonly anchorMaxLagSeconds: number;
  /** Token label of the EC P-384 audit key pair that signs checkpoints and heads (version in the label). */
  readonly keyLabel: string;
  /** PEM file with the audit public key for verification; unset = read it from the HSM. */
  readonly publicKeyFile?: string;
  /** Transaction attempts per batch when appenders race on one chain head. */
  readonly maxAppendAttempts: number;
}

/** AUDIT_CHECKPOINT_INTERVAL_SECONDS, which a deployment sets too (cdk/lib/settings.ts). */
export const AUDIT_CHECKPOINT_INTERVAL: IntegerRule = { fallback: 5, min: 1, max: 60 };

export function loadAuditConfig(env: Env): AuditConfig {
  const checkpointIntervalSeconds = integer(
    env,
    ENV.AUDIT_CHECKPOINT_INTERVAL_SECONDS,
    AUDIT_CHECKPOINT_INTERVAL,
  );
  const anchorTarget = env[ENV.AUDIT_ANCHOR_TARGET];
  return {
    chains: int(env, 'AUDIT_CHAINS', 8, 1, 256),
    checkpointIntervalSeconds,
    anchorTarget: anchorTarget ? objectTarget(anchorTarget, ENV.AUDIT_ANCHOR_TARGET) : undefined,
    anchorMaxLagSeconds: int(
      env,
      'AUDIT_ANCHOR_MAX_LAG_SECONDS',
      Math.max(120, 4 * checkpointIntervalSeconds),
      checkpointIntervalSeconds,
      86_400,
    ),
    keyLabel: str(env, 'AUDIT_KEY_LABEL', 'audit-checkpoint-v1'),
    publicKeyFile: env.AUDIT_PUBLIC_KEY_FILE || undefined,
    maxAppendAttempts: int(env, 'AUDIT_APPEND_MAX_ATTEMPTS', 30, 1, 1000),
  };
}
