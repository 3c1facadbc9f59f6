/**
 * The revocation Lambda: `{ action: 'revoke', serial, reason, requestedBy }` in (see core's ca-contract),
 * the revocation out. Invoked by the API (a client revoking its own signature) and by operators (npm run
 * pki); the signer cannot invoke it, and this function cannot issue. It holds no key: it marks the serial
 * revoked (once), appends the audit event, and starts the CRL publication, which signs in the HSM.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { documentClient, lambdaClient } from '@pipeline/adapters/aws';
import { LambdaFunction } from '@pipeline/adapters/lambda';
import { CertificateRepository } from '@pipeline/adapters/dynamodb';
import { createAuditLog } from '@pipeline/audit';
import {
  RevokeRequestSchema,
  caRefusal,
  type AuditSink,
  type RevokeOutcome,
  type RevokeResponse,
} from '@pipeline/core';
import { loadCaConfig, loadConfig } from '@pipeline/config';
import { TABLES, tableName } from '@pipeline/resources';
import { revokeCertificate } from '@pipeline/ca';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger } from '../shared/observability';
import { onceUntilFailure } from '../shared/once';

export interface RevokeContext {
  readonly certificates: CertificateRepository;
  readonly audit: AuditSink;
  /** Starts the CRL publication (asynchronous invoke): a revocation shows in the CRL within seconds. */
  readonly publish: () => Promise<void>;
}

async function setUp(): Promise<RevokeContext> {
  const config = loadConfig();
  const doc = documentClient(config.aws);
  const crl = new LambdaFunction(lambdaClient(config.aws), loadCaConfig().crlFunctionName);
  return {
    certificates: new CertificateRepository(doc, { tableName: tableName(TABLES.certificates) }),
    audit: await createAuditLog({ doc }),
    publish: () => crl.start(),
  };
}

export interface RevokeHandlerDeps {
  /** The records, the audit log and the CRL function, set up on first use; retried after a failure. */
  readonly revocation: () => Promise<RevokeContext>;
  readonly logger: Logger;
}

export function createRevokeHandler({
  revocation,
  logger,
}: RevokeHandlerDeps): LambdaHandler<unknown, RevokeResponse> {
  return lambdaHandler((event: unknown) => revoke(event, revocation, logger), { logger });
}

/** The revocation's dependencies from configuration: set up lazily, once per execution environment. */
export function wireRevoke(): RevokeHandlerDeps {
  return { revocation: onceUntilFailure(setUp), logger: createLogger('revoke') };
}

async function revoke(
  event: unknown,
  revocation: RevokeHandlerDeps['revocation'],
  logger: Logger,
): Promise<RevokeResponse> {
  const parsed = RevokeRequestSchema.safeParse(event);
  if (!parsed.success) {
    return caRefusal('BAD_REVOCATION', 'a revocation needs a serial, an RFC 5280 reason and who asks');
  }
  const { serial, reason, requestedBy } = parsed.data;
  let outcome: RevokeOutcome;
  try {
    const context = await revocation();
    outcome = await revokeCertificate(
      { store: context.certificates, audit: context.audit },
      serial,
      reason,
      requestedBy,
    );
    if (outcome.outcome === 'revoked') {
      // Awaited only to start it: the schedule publishes anyway; a failed start only delays the CRL.
      await context
        .publish()
        .catch((err: unknown) =>
          logger.warn('CRL publication not started', { errorName: (err as Error)?.name }),
        );
    }
  } catch (err) {
    logger.error('revocation failed', { errorName: (err as Error)?.name });
    return caRefusal('CA_UNAVAILABLE', 'the CA could not revoke now; retry later');
  }
  if (outcome.outcome === 'unknown')
    return caRefusal('CERTIFICATE_UNKNOWN', 'no certificate with this serial');
  const revoked = outcome.status.revocation!;
  logger.info('certificate revoked', {
    serialHex: outcome.status.serialHex,
    outcome: outcome.outcome,
    reason: revoked.reason,
    requestedBy,
  });
  return {
    ok: true,
    outcome: outcome.outcome,
    serialHex: outcome.status.serialHex,
    reason: revoked.reason,
    revokedAt: revoked.revokedAt,
  };
}
