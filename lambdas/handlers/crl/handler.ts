/**
 * Scheduled (and invoked asynchronously after every revocation): CA maintenance, then publication.
 * Maintenance is the CA bootstrap without key creation: it renews the delegated OCSP responder's
 * certificate before it expires (for the public key its current certificate names) and re-issues the
 * issuing CA certificate when its policy or pointers changed. Publication writes the root and issuing CA
 * certificates and both CRLs (fresh numbers, signed in the HSM) where PKI_BASE_URL serves them. The
 * issuing CRL keeps every entry of the one published before it (revocation is monotonic): an entry the
 * certificate records no longer show is kept, and raises an alarm (metric `RevocationsRestored`, an error
 * log line) and an audit event.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { documentClient, type DynamoDBDocumentClient } from '@pipeline/adapters/aws';
import { CertificateRepository } from '@pipeline/adapters/dynamodb';
import { connectHsm, type Hsm } from '@pipeline/adapters/hsm';
import { pkiPublisher } from '@pipeline/adapters/publish';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import { RevocationAuthority, bootstrapCaHierarchy } from '@pipeline/ca';
import type { CaCertificateStore } from '@pipeline/core/pki';
import type { CaConfig, CaSideFunctionConfig } from '@pipeline/config';
import type { AuditSink } from '@pipeline/core/audit';
import type { PkiObjectName, PkiPublisher } from '@pipeline/core/pki';
import { createLogger, createMetrics } from '../shared/observability';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { onceUntilFailure, type Once } from '../shared/once';
import { auditLogSigningWith } from '../shared/audit-signing';

/** Caches may keep a CRL this long: a revocation shows within minutes even though nextUpdate is later. */
const CRL_MAX_AGE_SECONDS = 300;
const CERTIFICATE_MAX_AGE_SECONDS = 86_400;

export interface PublicationResult {
  readonly maintenance: readonly string[];
  readonly issuingCrlNumber: number;
  readonly rootCrlNumber: number;
  readonly revokedEntries: number;
  /** Entries of the previous CRL the records no longer showed (kept all the same). */
  readonly restoredEntries: number;
}

/** The CA crypto user's HSM login, the certificate records, the CA certificates and the signers over them. */
export interface PkiContext {
  readonly config: CaConfig;
  readonly hsm: Hsm;
  readonly doc: DynamoDBDocumentClient;
  readonly certificateStore: CaCertificateStore;
  readonly publisher: PkiPublisher;
  /**
   * Signers over the CA certificates as last read; `authority.forget()` makes the next call read the CA
   * certificates again (after maintenance changed them).
   */
  readonly authority: Once<RevocationAuthority>;
}

export interface CrlHandlerDeps {
  /** The CA crypto user's login, the records, the CA certificates and the publisher (set up once). */
  readonly pki: () => Promise<PkiContext>;
  /** Where restored revocations are recorded (appends only). */
  readonly audit: () => Promise<AuditSink>;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export function createCrlHandler(deps: CrlHandlerDeps): LambdaHandler<unknown, PublicationResult> {
  const { logger, metrics } = deps;
  return lambdaHandler(
    async () => {
      // Every run reports it, zero included (a failed run too): the alarm pages on any restored entry.
      let restored = 0;
      try {
        const result = await publish(await deps.pki(), deps);
        restored = result.restoredEntries;
        return result;
      } finally {
        metrics.addMetric('RevocationsRestored', MetricUnit.Count, restored);
      }
    },
    { logger, metrics },
  );
}

/** Maintenance, then the CRLs and CA certificates signed in the HSM and published. */
async function publish(pki: PkiContext, { logger, audit }: CrlHandlerDeps): Promise<PublicationResult> {
  const { changes } = await bootstrapCaHierarchy(pki.hsm, pki.config, pki.certificateStore, {
    createKeys: false,
  });
  if (changes.length > 0) {
    logger.info('CA maintenance', { changes });
    pki.authority.forget();
  }
  const authority = await pki.authority();
  const previous = await pki.publisher.read('issuing.crl');
  const [issuing, root] = [await authority.issuingCrl(previous), await authority.rootCrl()];
  if (issuing.restored.length > 0) {
    // Revocations the records lost: kept in the CRL, and said loudly (alarm, error log, audit events).
    const serials = issuing.restored.map((e) => e.serialHex);
    logger.error('certificate records no longer show revocations the published CRL lists: kept in the CRL', {
      serials,
    });
    const log = await audit();
    await log.appendMany(serials.map((serial) => ({ type: 'revocation.restored' as const, serial })));
  }
  const objects: Array<[PkiObjectName, Buffer, number]> = [
    ['root.crt', authority.certificateDer('root'), CERTIFICATE_MAX_AGE_SECONDS],
    ['issuing.crt', authority.certificateDer('issuing'), CERTIFICATE_MAX_AGE_SECONDS],
    ['root.crl', root.der, CRL_MAX_AGE_SECONDS],
    ['issuing.crl', issuing.der, CRL_MAX_AGE_SECONDS],
  ];
  for (const [name, der, maxAgeSeconds] of objects) await pki.publisher.publish(name, der, { maxAgeSeconds });
  const result = {
    maintenance: changes,
    issuingCrlNumber: issuing.number,
    rootCrlNumber: root.number,
    revokedEntries: issuing.entries,
  };
  logger.info('published CRLs and CA certificates', { location: pki.publisher.location, ...result });
  return { ...result, restoredEntries: issuing.restored.length };
}

async function setUpPki(functionConfig: CaSideFunctionConfig): Promise<PkiContext> {
  const { hsm: hsmConfig, aws, tables } = functionConfig.app;
  const config = functionConfig.ca;
  // The CA keys (root, issuing, OCSP responder) belong to the CA's crypto user.
  const hsm = await connectHsm({ ...hsmConfig, pinSource: config.pinSource }, aws);
  const doc = documentClient(aws);
  const certificates = new CertificateRepository(doc, { tableName: tables.certificates });
  const certificateStore = caCertificateStore(config.certsSource, aws);
  const authority = onceUntilFailure(async () => {
    const caCertificates = await certificateStore.read();
    if (!caCertificates) throw new Error(`no CA certificates in ${certificateStore.location}`);
    return RevocationAuthority.create({ hsm, store: certificates, caCertificates, config });
  });
  return {
    config,
    hsm,
    doc,
    certificateStore,
    publisher: pkiPublisher(config.publishTarget, aws),
    authority,
  };
}

/** The publication's dependencies from configuration, set up once per execution environment. */
export function wireCrl(config: CaSideFunctionConfig): CrlHandlerDeps {
  const pki = onceUntilFailure(() => setUpPki(config));
  const logger = createLogger('crl');
  return {
    pki,
    // One DynamoDB client for the certificate records and the audit log; heads signed with the audit key
    // shared with the CA's crypto user.
    audit: onceUntilFailure(async () => {
      const { doc, hsm } = await pki();
      return auditLogSigningWith(doc, hsm, logger, {
        config: config.audit,
        tableName: config.app.tables.audit,
      });
    }),
    logger,
    metrics: createMetrics(),
  };
}
