import { PKI_OBJECTS } from '@pipeline/core/pki';
import { ENV } from '@pipeline/config';
import { SCHEDULES, TABLES } from '@pipeline/resources';
import { caCertsEnv, loginEnv, tableEnv, type FunctionSpec } from './spec';

/** The publication: the CA's crypto user, on its schedule and after each revocation. */
export const crl: FunctionSpec = {
  name: 'crl',
  description:
    'Scheduled and after each revocation: renews the OCSP responder certificate, publishes CRLs and CA certificates',
  memorySize: 512,
  schedule: SCHEDULES.crl,
  network: { kind: 'hsm', cryptoUser: 'ca' },
  environment: (deps) => ({
    ...loginEnv(deps, 'ca'),
    ...caCertsEnv(deps),
    ...tableEnv(deps, 'certificates', 'audit'),
  }),
  grants: (grant) => {
    // Revoked serials from the sparse index, CRL numbers from their counters.
    grant.queryIndex('certificates', TABLES.certificates.globalSecondaryIndexes[0].indexName);
    grant.tableItems('certificates', ['UpdateItem'], ['CRL#*']);
    // The statuses of published entries the records no longer list (revocation is monotonic), and the
    // audit events saying so.
    grant.tableItems('certificates', ['BatchGetItem'], ['SERIAL#*']);
    grant.appendsAudit();
    grant.tableKey();
    grant.login();
    // Renewing the OCSP responder certificate writes the CA certificate parameters.
    grant.caCertificates(['root', 'issuing', 'ocsp', 'tsa'], 'read-write');
  },
  connectPublicPki: (grant, pki) => {
    grant.fn.addEnvironment(ENV.PKI_BASE_URL, pki.baseUrl);
    // It reads the published CRL back to keep its entries.
    grant.fn.addEnvironment(ENV.PKI_PUBLISH_TARGET, `s3:${pki.bucket.bucketName}`);
    // Exactly the published objects, nothing else in the bucket.
    grant.statement(
      ['s3:PutObject'],
      Object.keys(PKI_OBJECTS).map((name) => pki.bucket.arnForObjects(name)),
    );
    grant.readsObjects(pki.bucket, ['issuing.crl']);
  },
};
