/**
 * The audit logs of the functions: each entry's head is signed with the audit key by every function whose
 * HSM login can use it (the pool user's: signer, keygen, checkpointer; the CA user's, with which the key
 * is shared: CA and CRL), and the checkpointer also signs checkpoints.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { auditAnchorStore } from '@pipeline/adapters/anchors';
import { documentClient, type DynamoDBDocumentClient } from '@pipeline/adapters/aws';
import type { AuditLog } from '@pipeline/audit';
import type { AppConfig, AuditConfig } from '@pipeline/config';
import { auditLogSigningWith } from './audit-signing';
import { createAuditLog } from './create-audit-log';
import { sharedHsm } from './hsm';
import { onceUntilFailure, type Once } from './once';

/**
 * Set up on first use, retried after a failed HSM connect. Without the audit key (not yet provisioned)
 * events are still appended, with unsigned heads, and the error is logged: the key pool and signing go
 * on, and the checkpointer's failures raise the alarm.
 */
export function headSigningAuditLog(
  doc: DynamoDBDocumentClient,
  config: { readonly app: AppConfig; readonly audit: AuditConfig },
  logger: Logger,
): Once<AuditLog> {
  return onceUntilFailure(async () =>
    auditLogSigningWith(doc, await sharedHsm(config.app), logger, {
      config: config.audit,
      tableName: config.app.tables.audit,
    }),
  );
}

/** The checkpointer's log: it needs the audit key and, when AUDIT_ANCHOR_TARGET is set, anchors. */
export function checkpointingAuditLog(config: {
  readonly app: AppConfig;
  readonly audit: AuditConfig;
}): Once<AuditLog> {
  const { app, audit } = config;
  return onceUntilFailure(async () =>
    createAuditLog({
      doc: documentClient(app.aws),
      hsm: await sharedHsm(app),
      config: audit,
      tableName: app.tables.audit,
      anchors: audit.anchorTarget ? auditAnchorStore(audit.anchorTarget, app.aws) : undefined,
    }),
  );
}
