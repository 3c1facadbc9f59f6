/**
 * Scheduled (and invoked asynchronously after every revocation): CA maintenance, then publication.
 * Maintenance is the CA bootstrap without key creation: it renews the delegated OCSP responder's
 * certificate before it expires and re-issues the issuing CA certificate when its policy or pointers
 * changed. Publication writes the root and issuing CA certificates and both CRLs (fresh numbers, signed
 * in the HSM) where PKI_BASE_URL serves them.
 */
import type { Context } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { bootstrapCaHierarchy } from '../../ca/src';
import type { PkiObjectName } from '../../core/src';
import { sharedPki } from '../shared/pki';

const logger = new Logger({ serviceName: 'crl' });

/** Caches may keep a CRL this long: a revocation shows within minutes even though nextUpdate is later. */
const CRL_MAX_AGE_SECONDS = 300;
const CERTIFICATE_MAX_AGE_SECONDS = 86_400;

export interface PublicationResult {
  readonly maintenance: readonly string[];
  readonly issuingCrlNumber: number;
  readonly rootCrlNumber: number;
  readonly revokedEntries: number;
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
  const [issuing, root] = [await authority.issuingCrl(), await authority.rootCrl()];
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
  return result;
}
