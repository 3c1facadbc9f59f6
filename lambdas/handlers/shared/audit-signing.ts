/**
 * An audit log that signs each entry's head with the audit key, for any HSM login: kept apart from
 * audit.ts (whose pool-user log loads the wiring of queue and pool) so that the CA and CRL functions, which
 * log in as the CA's crypto user, load neither.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBDocumentClient } from '@pipeline/adapters/aws';
import type { AuditLog } from '@pipeline/audit';
import { errorCode, type Hsm } from '@pipeline/core/shared';
import { createAuditLog, type AuditLogSettings } from './create-audit-log';

/**
 * An audit log that signs each entry's head with the audit key as the given HSM login finds it (the CA
 * and CRL functions pass their CA user's login). Without the key (not provisioned, not shared with this
 * user) events are still appended, with unsigned heads, and the error is logged.
 */
export async function auditLogSigningWith(
  doc: DynamoDBDocumentClient,
  hsm: Pick<Hsm, 'findPrivateKey' | 'signDigest'>,
  logger: Logger,
  settings: AuditLogSettings,
): Promise<AuditLog> {
  return createAuditLog({ doc, hsm, ...settings }).catch((err: unknown) => {
    logger.error('audit key unavailable: heads unsigned', { errorCode: errorCode(err) });
    return createAuditLog({ doc, ...settings });
  });
}
