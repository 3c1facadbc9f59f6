/**
 * The audit logs of the functions: each entry's head is signed with the audit key by every function whose
 * HSM login can use it (the pool user's: signer, keygen, checkpointer; the CA user's, with which the key
 * is shared: CA and CRL), and the checkpointer also signs checkpoints.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { auditAnchorStore } from '@pipeline/adapters/anchors';
import type { AuditLog } from '@pipeline/audit';
import { loadAuditConfig } from '@pipeline/config';
import { auditLogSigningWith } from './audit-signing';
import { createAuditLog } from './create-audit-log';
import { sharedHsm } from './hsm';
import { onceUntilFailure, type Once } from './once';
import { wire } from './wiring';

let signing: Once<AuditLog> | undefined;

/**
 * One per execution environment, retried after a failed HSM connect. Without the audit key (not yet
 * provisioned) events are still appended, with unsigned heads, and the error is logged: the key pool and
 * signing go on, and the checkpointer's failures raise the alarm.
 */
export function headSigningAuditLog(logger: Logger): Promise<AuditLog> {
  signing ??= onceUntilFailure(async () => auditLogSigningWith(wire().doc, await sharedHsm(), logger));
  return signing();
}

/** The checkpointer's log: it needs the audit key and, when AUDIT_ANCHOR_TARGET is set, anchors. */
export const checkpointingAuditLog = onceUntilFailure(async () => {
  const { doc, config } = wire();
  const audit = loadAuditConfig();
  return createAuditLog({
    doc,
    hsm: await sharedHsm(),
    config: audit,
    anchors: audit.anchorTarget ? auditAnchorStore(audit.anchorTarget, config.aws) : undefined,
  });
});
