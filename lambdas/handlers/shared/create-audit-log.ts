/**
 * Wiring: the AuditLog the handlers use, over the configured table, signing heads and checkpoints with the
 * audit key in the HSM (when an HSM is given). One per process; call flush() before the process ends.
 */
import type { DynamoDBDocumentClient } from '@pipeline/adapters/aws';
import { AuditRepository } from '@pipeline/adapters/dynamodb';
import { AuditLog, hsmAuditSigner } from '@pipeline/audit';
import type { AuditAnchorStore } from '@pipeline/core/audit';
import type { Hsm } from '@pipeline/core/shared';
import type { AuditConfig } from '@pipeline/config';

/** The log's settings and its table's physical name. */
export interface AuditLogSettings {
  readonly config: AuditConfig;
  readonly tableName: string;
}

export interface CreateAuditLogDeps extends AuditLogSettings {
  readonly doc: DynamoDBDocumentClient;
  /**
   * Holds the audit key: signs each entry's head and checkpoints. Without it the log appends unsigned
   * heads and checkpoint() throws AuditNotReadyError.
   */
  readonly hsm?: Pick<Hsm, 'findPrivateKey' | 'signDigest'>;
  /** Where checkpoints are anchored (the checkpointer and the operator's CLI). */
  readonly anchors?: AuditAnchorStore;
}

export async function createAuditLog(deps: CreateAuditLogDeps): Promise<AuditLog> {
  const { config } = deps;
  const store = new AuditRepository(deps.doc, { tableName: deps.tableName });
  return new AuditLog(store, {
    chains: config.chains,
    maxAttempts: config.maxAppendAttempts,
    signer: deps.hsm ? await hsmAuditSigner(deps.hsm, config.keyLabel) : undefined,
    anchors: deps.anchors,
  });
}
