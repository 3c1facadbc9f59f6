/**
 * What the signing core's integration tests run against. The SoftHSM token, fresh DynamoDB
 * Local tables (pool, requests, certificates, audit) with their repositories, and the real CA over the
 * bootstrap's CA keys and certificates.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { KeyPoolRepository, RequestRepository, AuditRepository } from '@pipeline/adapters/dynamodb';
import { connectHsm, type Pkcs11Hsm } from '@pipeline/adapters/hsm';
import type { CertificateAuthority } from '@pipeline/ca';
import type { CaCertificates } from '@pipeline/core/pki';
import { loadConfig } from '@pipeline/config';
import { createLocalCa } from './local-ca';
import { createTestTables } from './resources';

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

export async function createTestSigningStack(options: { poolShards: number }): Promise<TestSigningStack> {
  const config = loadConfig(process.env);
  const hsm = await connectHsm(config.hsm, config.aws);
  const doc = documentClient(config.aws);
  const tables = await createTestTables(['keyPool', 'requests', 'certificates', 'audit']);
  const requests = new RequestRepository(doc, { tableName: tables.requests });
  const { issuer, caCertificates } = await createLocalCa({
    hsm,
    doc,
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
