/**
 * The real CA of the local environment: the CA keys on the local SoftHSM token and the certificates the
 * bootstrap issued, with a certificate table of the caller's choosing (benchmarks and tests), trusting
 * the direct identity provider's assertions unless told otherwise. Each certificate is stored with the
 * audit entry of its event in one transaction, as the CA function does.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  AuditRepository,
  CertificateRepository,
  LoggedCertificateRepository,
} from '@pipeline/adapters/dynamodb';
import type { Pkcs11Hsm } from '@pipeline/adapters/hsm';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import { AuditLog } from '@pipeline/audit';
import { CertificateAuthority } from '@pipeline/ca';
import type { CaCertificates } from '@pipeline/core/pki';
import { loadCaConfig, loadConfig } from '@pipeline/config';
import type { AssertionVerifier } from '@pipeline/core/identity';
import { directAssertionVerifier } from './idp/direct-assertions';
import { createTestTables } from './resources';

export async function createLocalCa(deps: {
  readonly hsm: Pkcs11Hsm;
  readonly doc: DynamoDBDocumentClient;
  readonly certificatesTable: string;
  readonly evidence?: AssertionVerifier;
  /**
   * The audit log the certificates are logged in, read back for a takeover's evidence (as the CA
   * function's). Without it, the CA logs in an audit table of its own and replaces no certificate.
   */
  readonly audit?: AuditLog;
  readonly now?: () => number;
}): Promise<{ issuer: CertificateAuthority; caCertificates: CaCertificates }> {
  const caConfig = loadCaConfig(process.env);
  const caCertificates = await caCertificateStore(caConfig.certsSource, loadConfig(process.env).aws).read();
  if (!caCertificates) throw new Error('no CA certificates: run `bash scripts/bootstrap.sh`');
  const certificates = new CertificateRepository(deps.doc, { tableName: deps.certificatesTable });
  const audit = deps.audit ?? (await ownAuditLog(deps.doc));
  const issuer = await CertificateAuthority.create({
    hsm: deps.hsm,
    certificates,
    caCertificates,
    config: caConfig,
    evidence: deps.evidence ?? directAssertionVerifier(),
    audit,
    logged: new LoggedCertificateRepository(certificates, audit),
    ...(deps.audit ? { signatures: deps.audit } : {}),
    ...(deps.now ? { now: deps.now } : {}),
  });
  return { issuer, caCertificates };
}

/** An audit log in a fresh table: the caller's own log stays as its tests expect it. */
async function ownAuditLog(doc: DynamoDBDocumentClient): Promise<AuditLog> {
  const tables = await createTestTables(['audit']);
  return new AuditLog(new AuditRepository(doc, { tableName: tables.audit }), { chains: 1 });
}
