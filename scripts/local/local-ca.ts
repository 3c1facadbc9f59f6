/**
 * The real CA of the local environment: the CA keys on the local SoftHSM token and the certificates the
 * bootstrap issued, with a certificate table of the caller's choosing (benchmarks and tests), trusting
 * the direct identity provider's assertions unless told otherwise.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CertificateRepository } from '@pipeline/adapters/dynamodb';
import type { Pkcs11Hsm } from '@pipeline/adapters/hsm';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import { CertificateAuthority } from '@pipeline/ca';
import type { CaCertificates } from '@pipeline/core/pki';
import { loadCaConfig, loadConfig } from '@pipeline/config';
import type { AssertionVerifier } from '@pipeline/core/identity';
import type { AuditSink } from '@pipeline/core/audit';
import { directAssertionVerifier } from './idp/direct-assertions';

export async function createLocalCa(deps: {
  readonly hsm: Pkcs11Hsm;
  readonly doc: DynamoDBDocumentClient;
  readonly certificatesTable: string;
  readonly evidence?: AssertionVerifier;
  readonly audit?: AuditSink;
  readonly now?: () => number;
}): Promise<{ issuer: CertificateAuthority; caCertificates: CaCertificates }> {
  const caConfig = loadCaConfig();
  const caCertificates = await caCertificateStore(caConfig.certsSource, loadConfig().aws).read();
  if (!caCertificates) throw new Error('no CA certificates: run `bash scripts/bootstrap.sh`');
  const issuer = await CertificateAuthority.create({
    hsm: deps.hsm,
    certificates: new CertificateRepository(deps.doc, { tableName: deps.certificatesTable }),
    caCertificates,
    config: caConfig,
    evidence: deps.evidence ?? directAssertionVerifier(),
    ...(deps.audit ? { audit: deps.audit } : {}),
    ...(deps.now ? { now: deps.now } : {}),
  });
  return { issuer, caCertificates };
}
