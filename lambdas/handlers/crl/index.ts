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
import type { Context } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, Metrics } from '@aws-lambda-powertools/metrics';
import { createAuditLog } from '@pipeline/audit';
import { bootstrapCaHierarchy } from '@pipeline/ca';
import type { AuditSink, PkiObjectName } from '@pipeline/core';
import { documentClient } from '@pipeline/adapters/aws';
import { sharedPki } from '../shared/pki';

const logger = new Logger({ serviceName: 'crl' });
const metrics = new Metrics({ namespace: 'SigningPipeline' });
let audit: Promise<AuditSink> | undefined;

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

export async function handler(_event?: unknown, context?: Context): Promise<PublicationResult> {
  // Every log line of the invocation carries the Lambda context (function, request id, cold start).
  if (context) logger.addContext(context);
  const pki = await sharedPki();
  const { changes } = await bootstrapCaHierarchy(pki.hsm, pki.config, pki.certificateStore, {
    createKeys: false,
  });
  if (changes.length > 0) {
    logger.info('CA maintenance', { changes });
    pki.reload();
  }
  const authority = await pki.authority();
  const previous = await pki.publisher.read('issuing.crl');
  const [issuing, root] = [await authority.issuingCrl(previous), await authority.rootCrl()];
  if (issuing.restored.length > 0)
    await restored(
      issuing.restored.map((e) => e.serialHex),
      pki.aws,
    );
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

/** Revocations the records lost: kept in the CRL; said loudly (alarm metric, error log, audit events). */
async function restored(
  serials: readonly string[],
  aws: Parameters<typeof documentClient>[0],
): Promise<void> {
  logger.error('certificate records no longer show revocations the published CRL lists: kept in the CRL', {
    serials,
  });
  const single = metrics.singleMetric();
  single.addMetric('RevocationsRestored', MetricUnit.Count, serials.length);
  audit ??= createAuditLog({ doc: documentClient(aws) });
  await (await audit).appendMany(serials.map((serial) => ({ type: 'revocation.restored' as const, serial })));
}
