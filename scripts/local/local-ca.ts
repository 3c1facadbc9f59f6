/**
 * The real CA of the local environment: the CA keys on the local SoftHSM token and the certificates the
 * bootstrap issued, with a certificate table of the caller's choosing (benchmarks and tests), trusting
 * the direct identity provider's assertions unless told otherwise.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CertificateRepository, LoggedCertificateRepository } from '@pipeline/adapters/dynamodb';
import type { Pkcs11Hsm } from '@pipeline/adapters/hsm';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import { AuditLog } from '@pipeline/audit';
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
  /**
   * An AuditLog over the same DynamoDB endpoint: each certificate is then stored with the audit entry of
   * its event in one transaction (as the CA function does); any other sink takes appends only.
   */
  readonly audit?: AuditSink;
  readonly now?: () => number;
}): Promise<{ issuer: CertificateAuthority; caCertificates: CaCertificates }> {
  const caConfig = loadCaConfig(process.env);
  const caCertificates = await caCertificateStore(caConfig.certsSource, loadConfig(process.env).aws).read();
  if (!caCertificates) throw new Error('no CA certificates: run `bash scripts/bootstrap.sh`');
  const certificates = new CertificateRepository(deps.doc, { tableName: deps.certificatesTable });
  const issuer = await CertificateAuthority.create({
    hsm: deps.hsm,
    certificates,
    caCertificates,
    config: caConfig,
    evidence: deps.evidence ?? directAssertionVerifier(),
    ...(deps.audit ? { audit: deps.audit } : {}),
    ...(deps.audit instanceof AuditLog
      ? { logged: new LoggedCertificateRepository(certificates, deps.audit), signatures: deps.audit }
      : {}),
    ...(deps.now ? { now: deps.now } : {}),
  });
  return { issuer, caCertificates };
}
