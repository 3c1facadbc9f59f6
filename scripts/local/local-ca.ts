/**
 * The real CA of the local environment: the CA keys on the local SoftHSM token and the certificates the
 * bootstrap issued, with a certificate table of the caller's choosing (benchmarks and tests).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RequestRepository } from '../../lambdas/adapters/dynamodb/src';
import { CertificateRepository } from '../../lambdas/adapters/dynamodb/src/certificate-repository';
import type { Pkcs11Hsm } from '../../lambdas/adapters/hsm/src';
import { CertificateAuthority, caCertificateStore, type CaCertificates } from '../../lambdas/ca/src';
import { loadCaConfig, loadConfig } from '../../lambdas/config/src';

export async function createLocalCa(deps: {
  readonly hsm: Pkcs11Hsm;
  readonly doc: DynamoDBDocumentClient;
  readonly requests: RequestRepository;
  readonly certificatesTable: string;
}): Promise<{ issuer: CertificateAuthority; caCertificates: CaCertificates }> {
  const caConfig = loadCaConfig();
  const caCertificates = await caCertificateStore(caConfig.certsSource, loadConfig().aws).read();
  if (!caCertificates) throw new Error('no CA certificates: run `bash scripts/bootstrap.sh`');
  const issuer = await CertificateAuthority.create({
    hsm: deps.hsm,
    requests: deps.requests,
    certificates: new CertificateRepository(deps.doc, { tableName: deps.certificatesTable }),
    caCertificates,
    config: caConfig,
  });
  return { issuer, caCertificates };
}
