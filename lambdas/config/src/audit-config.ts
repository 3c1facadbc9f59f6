import { int, str } from './config';
import type { Env } from './types';

/** Tamper-evident audit log settings (the table name comes from AUDIT_TABLE_NAME, see TABLES.audit). */
export interface AuditConfig {
  /** Hash chains events are spread over by entity id; fixed for a table's lifetime. */
  readonly chains: number;
  /** Signed checkpoint after this many entries appended by one process; 0 = on demand/schedule only. */
  readonly checkpointEvery: number;
  /** Token label of the EC P-384 audit key pair that signs checkpoints (version in the label). */
  readonly keyLabel: string;
  /** PEM file with the audit public key for verification; unset = read it from the HSM. */
  readonly publicKeyFile?: string;
  /** Transaction attempts per batch when appenders race on one chain head. */
  readonly maxAppendAttempts: number;
}

export function loadAuditConfig(env: Env = process.env): AuditConfig {
  return {
    chains: int(env, 'AUDIT_CHAINS', 8, 1, 256),
    checkpointEvery: int(env, 'AUDIT_CHECKPOINT_EVERY', 1000, 0, 1_000_000),
    keyLabel: str(env, 'AUDIT_KEY_LABEL', 'audit-checkpoint-v1'),
    publicKeyFile: env.AUDIT_PUBLIC_KEY_FILE || undefined,
    maxAppendAttempts: int(env, 'AUDIT_APPEND_MAX_ATTEMPTS', 30, 1, 1000),
  };
}
