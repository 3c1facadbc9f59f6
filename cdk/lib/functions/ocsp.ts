import { ENV } from '@pipeline/config';
import { caCertsEnv, loginEnv, tableEnv, type FunctionSpec } from './spec';

/**
 * The OCSP function's reserved concurrency: its share of the account's, and its cap. Each execution
 * environment signs a certificate state at most once, so this also bounds the signatures per state.
 */
const OCSP_RESERVED_CONCURRENCY = 20;

/** The public responder: its own crypto user, which owns the responder key and nothing else. */
export const ocsp: FunctionSpec = {
  name: 'ocsp',
  description:
    'OCSP responder: good / revoked / unknown from the published CRL and the certificate records, signed once per state by its own key',
  memorySize: 512,
  timeoutSeconds: 10,
  // Reserved, and so capped: a flood at the public endpoint can neither take the account's concurrency
  // from the signer nor open more HSM sessions on its cluster than this.
  reservedConcurrency: OCSP_RESERVED_CONCURRENCY,
  network: { kind: 'hsm', cryptoUser: 'ocsp' },
  environment: (deps) => ({
    ...loginEnv(deps, 'ocsp'),
    ...caCertsEnv(deps),
    ...tableEnv(deps, 'certificates'),
  }),
  grants: (grant) => {
    // The statuses of the serials asked about (SERIAL# items only: never a REQ# record with its
    // subject's personal number); the CA certificates, read only.
    grant.tableItems('certificates', ['BatchGetItem'], ['SERIAL#*']);
    grant.tableKey();
    grant.login();
    grant.caCertificates(['root', 'issuing', 'ocsp']);
  },
  // It answers from the published CRL. Not PKI_BASE_URL: its answers name no URL, and the distribution
  // depends on it.
  connectPublicPki: (grant, pki) => {
    grant.fn.addEnvironment(ENV.PKI_PUBLISH_TARGET, `s3:${pki.bucket.bucketName}`);
    grant.readsObjects(pki.bucket, ['issuing.crl']);
  },
};
