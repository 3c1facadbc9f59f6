/**
 * The revocation Lambda (see core's ca-contract): `revoke` a serial (operators, npm run pki),
 * `revoke-request` the certificate the CA issued for a request id, for the client the CA recorded it to
 * (the API, for a client revoking its own signature), and `register-request`, with which the API records
 * a request id as the client's before it stores the request. The signer cannot invoke it, and this
 * function cannot issue. It holds no CA key: it marks the serial revoked (once), appends the audit event,
 * and starts the CRL publication, which signs in the HSM. It logs in to the HSM as its own crypto user,
 * which holds a share of the audit key and nothing else, to sign the heads of the entries it appends. A
 * login that cannot find the key appends unsigned heads (logged); a login that fails refuses the
 * revocation for now (CA_UNAVAILABLE), as an unreachable table does, and the next invocation tries again.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { documentClient, lambdaClient } from '@pipeline/adapters/aws';
import { connectHsm } from '@pipeline/adapters/hsm';
import { LambdaFunction } from '@pipeline/adapters/lambda';
import { CertificateRepository } from '@pipeline/adapters/dynamodb';
import {
  REVOCATION_REFUSALS,
  RevokeRequestSchema,
  caRefusal,
  type RegisterResponse,
  type RevokeResponse,
} from '@pipeline/core/pki';
import type { AuditSink, RequestRevokeOutcome } from '@pipeline/core/audit';
import type { CaSideFunctionConfig } from '@pipeline/config';
import { retireCredentialCertificate, revokeCertificate, revokeRequestCertificate } from '@pipeline/ca';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger } from '../shared/observability';
import { onceUntilFailure } from '../shared/once';
import { auditLogSigningWith } from '../shared/audit-signing';

export interface RevokeContext {
  readonly certificates: CertificateRepository;
  /** How long a request id stays registered to its client (seconds): longer than its certificate lives. */
  readonly ownerTtlSeconds: number;
  readonly audit: AuditSink;
  /** Starts the CRL publication (asynchronous invoke): a revocation shows in the CRL within seconds. */
  readonly publish: () => Promise<void>;
}

async function setUp(functionConfig: CaSideFunctionConfig, logger: Logger): Promise<RevokeContext> {
  const { app: config, ca } = functionConfig;
  const doc = documentClient(config.aws);
  const crl = new LambdaFunction(lambdaClient(config.aws), ca.crlFunctionName);
  return {
    certificates: new CertificateRepository(doc, { tableName: config.tables.certificates }),
    // The certificate's validity, plus the longest a request may wait for it, and a day.
    ownerTtlSeconds: (ca.leafValidityDays + 2) * 86_400,
    // Heads signed with the audit key shared with this function's own crypto user (HSM_PIN_SOURCE).
    audit: await auditLogSigningWith(doc, await connectHsm(config.hsm, config.aws), logger, {
      config: functionConfig.audit,
      tableName: config.tables.audit,
    }),
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
}: RevokeHandlerDeps): LambdaHandler<unknown, RevokeResponse | RegisterResponse> {
  return lambdaHandler((event: unknown) => revoke(event, revocation, logger), { logger });
}

/** The revocation's dependencies from configuration: set up lazily, once per execution environment. */
export function wireRevoke(config: CaSideFunctionConfig): RevokeHandlerDeps {
  const logger = createLogger('revoke');
  return { revocation: onceUntilFailure(() => setUp(config, logger)), logger };
}

async function revoke(
  event: unknown,
  revocation: RevokeHandlerDeps['revocation'],
  logger: Logger,
): Promise<RevokeResponse | RegisterResponse> {
  const parsed = RevokeRequestSchema.safeParse(event);
  if (!parsed.success) {
    return caRefusal(
      'BAD_REVOCATION',
      'a revocation needs a serial or a request id and client, an RFC 5280 reason and who asks',
    );
  }
  const request = parsed.data;
  let outcome: RequestRevokeOutcome;
  try {
    const context = await revocation();
    if (request.action === 'register-request') {
      const expiresAt = Math.floor(Date.now() / 1000) + context.ownerTtlSeconds;
      if (await context.certificates.registerOwner(request.requestId, request.client, expiresAt)) {
        return { ok: true };
      }
      logger.warn('request id registered to another client', { requestId: request.requestId });
      return caRefusal(REVOCATION_REFUSALS.taken, 'the request id belongs to another client');
    }
    const deps = { store: context.certificates, audit: context.audit };
    outcome =
      request.action === 'revoke'
        ? await revokeCertificate(deps, request.serial, request.reason, request.requestedBy)
        : request.action === 'retire-credential'
          ? await retireCredentialCertificate(deps, request.requestId, request.requestedBy)
          : await revokeRequestCertificate(deps, request.requestId, request.client, request.reason);
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
  if (outcome.outcome === 'not-owned') {
    logger.warn('revocation refused', {
      requestId: (request as { requestId?: string }).requestId,
      code: REVOCATION_REFUSALS.notOwned,
    });
    return caRefusal(REVOCATION_REFUSALS.notOwned, 'the CA has no such request of this client');
  }
  if (outcome.outcome === 'used') {
    return caRefusal(REVOCATION_REFUSALS.used, 'the one-time credential was used: not retired');
  }
  if (outcome.outcome === 'unknown') {
    return caRefusal(
      REVOCATION_REFUSALS.unknown,
      request.action === 'revoke' ? 'no certificate with this serial' : 'no certificate for this request',
    );
  }
  const revoked = outcome.status.revocation!;
  logger.info('certificate revoked', {
    serialHex: outcome.status.serialHex,
    outcome: outcome.outcome,
    reason: revoked.reason,
    requestedBy: request.action === 'revoke-request' ? request.client : request.requestedBy,
  });
  return {
    ok: true,
    outcome: outcome.outcome,
    serialHex: outcome.status.serialHex,
    reason: revoked.reason,
    revokedAt: revoked.revokedAt,
    ...(outcome.outcome === 'revoked' && outcome.receipt ? { receipt: outcome.receipt } : {}),
  };
}
