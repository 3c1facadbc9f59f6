/**
 * Test support: what the signing core's integration tests run against. The SoftHSM token, fresh DynamoDB
 * Local tables (pool, requests, certificates, audit) with their repositories, and the real CA over the
 * bootstrap's CA keys and certificates.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../adapters/aws/src';
import { KeyPoolRepository, RequestRepository } from '../adapters/dynamodb/src';
import { AuditRepository } from '../adapters/dynamodb/src/audit-repository';
import { CertificateRepository } from '../adapters/dynamodb/src/certificate-repository';
import { connectHsm, type Pkcs11Hsm } from '../adapters/hsm/src';
import { CertificateAuthority, caCertificateStore, type CaCertificates } from '../ca/src';
import { loadCaConfig, loadConfig } from '../config/src';
import { createTestTables } from './dynamodb';

export interface TestSigningStack {
  readonly hsm: Pkcs11Hsm;
  readonly doc: DynamoDBDocumentClient;
  readonly tables: Record<'keyPool' | 'requests' | 'certificates' | 'audit', string>;
  readonly pool: KeyPoolRepository;
  readonly requests: RequestRepository;
  readonly auditStore: AuditRepository;
  readonly issuer: CertificateAuthority;
  readonly caCertificates: CaCertificates;
  /** Closes the HSM and the DynamoDB client. */
  close(): Promise<void>;
}

/** The real CA over the local token's CA keys and the bootstrap's certificates (tests and benchmarks). */
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

export async function createTestSigningStack(options: { poolShards: number }): Promise<TestSigningStack> {
  const config = loadConfig();
  const hsm = await connectHsm(config.hsm, config.aws);
  const doc = documentClient(config.aws);
  const tables = await createTestTables(['keyPool', 'requests', 'certificates', 'audit']);
  const requests = new RequestRepository(doc, { tableName: tables.requests });
  const { issuer, caCertificates } = await createLocalCa({
    hsm,
    doc,
    requests,
    certificatesTable: tables.certificates,
  });
  return {
    hsm,
    doc,
    tables,
    pool: new KeyPoolRepository(doc, { tableName: tables.keyPool, shards: options.poolShards }),
    requests,
    auditStore: new AuditRepository(doc, { tableName: tables.audit }),
    issuer,
    caCertificates,
    close: async () => {
      doc.destroy();
      await hsm.close();
    },
  };
}
