import type { TableDefinition } from './types';

/**
 * The one source of truth for tables (and, as the pipeline lands, queues, schedules and routes). The CDK
 * app creates exactly these; the local runner and the integration tests create them in DynamoDB Local.
 */
export const TABLES = {
  /** Wrapped key pairs waiting to be used once, plus per-shard availability counters. */
  keyPool: {
    id: 'KeyPool',
    envVar: 'POOL_TABLE_NAME',
    localName: 'key-pool',
    partitionKey: { name: 'pk', type: 'S' },
    sortKey: { name: 'sk', type: 'S' },
    ttlAttribute: 'expiresAt',
  },
  /**
   * One item per sign request (SignRequestRecord). Open requests (received, signing) also carry
   * `openShard`, which their terminal transition removes: a sparse index of just the open ones, oldest
   * first per shard, for the reconciler. Sharded so that peak-rate writes spread over partitions.
   */
  requests: {
    id: 'SignRequests',
    envVar: 'REQUESTS_TABLE_NAME',
    localName: 'sign-requests',
    partitionKey: { name: 'id', type: 'S' },
    ttlAttribute: 'expiresAt',
    globalSecondaryIndexes: [
      {
        indexName: 'open-requests',
        partitionKey: { name: 'openShard', type: 'S' },
        sortKey: { name: 'receivedAt', type: 'N' },
        projection: 'KEYS_ONLY',
      },
    ],
  },
  /**
   * Every certificate the CA issued: by serial (never repeats) and by request (one per request); the CRL
   * numbers; the CA's registers of the assertions and public keys it certified (only these expire, TTL).
   * Revoked serials also carry `revokedList`: a sparse index of just the revoked ones, by expiry, which
   * the CRL is built from.
   */
  certificates: {
    id: 'IssuedCertificates',
    envVar: 'CERTIFICATES_TABLE_NAME',
    localName: 'issued-certificates',
    partitionKey: { name: 'pk', type: 'S' },
    ttlAttribute: 'expiresAt',
    globalSecondaryIndexes: [
      {
        indexName: 'revoked-certificates',
        partitionKey: { name: 'revokedList', type: 'S' },
        sortKey: { name: 'notAfter', type: 'N' },
        projection: 'ALL',
      },
    ],
  },
  /** Request counts per key type (pk) per hour bucket (bucket, epoch ms): the forecaster's history. */
  demand: {
    id: 'DemandHistory',
    envVar: 'DEMAND_TABLE_NAME',
    localName: 'demand-history',
    partitionKey: { name: 'pk', type: 'S' },
    sortKey: { name: 'bucket', type: 'N' },
    ttlAttribute: 'expiresAt',
  },
  /**
   * Identity assertions already used (pk: replay key, see VerifiedAssertion.replayKey), each with the request
   * and client that used it, until the assertion expires (TTL): one login signs one request.
   */
  assertions: {
    id: 'IdentityAssertions',
    envVar: 'ASSERTIONS_TABLE_NAME',
    localName: 'identity-assertions',
    partitionKey: { name: 'pk', type: 'S' },
    ttlAttribute: 'expiresAt',
  },
  /**
   * The CSC API's OAuth 2.0 state (pk: `FLOW#`, `CODE#`, `TOKEN#`, `PAR#`, `RESP#` with the hash of the
   * secret, never the secret; what an item holds sealed under its secret): pending logins, authorization
   * codes, access tokens, pushed requests and mode A outcomes, each taken or used once by a conditional
   * write, all short-lived (TTL).
   */
  csc: {
    id: 'CscAuthorizations',
    envVar: 'CSC_TABLE_NAME',
    localName: 'csc-authorizations',
    partitionKey: { name: 'pk', type: 'S' },
    ttlAttribute: 'expiresAt',
  },
  /**
   * The DSS-Ext door's state (pk: `REQ#<hash of SignRequester and RequestID>`, each SignRequest once;
   * `FLOW#<hash of the flow id>`, a login, sealed under its id, answered once): short-lived (TTL), and
   * trusted by nobody else: the door verifies a flow's SignRequest again, the CA all the evidence.
   */
  dssExt: {
    id: 'DssExtFlows',
    envVar: 'DSSEXT_TABLE_NAME',
    localName: 'dss-ext-flows',
    partitionKey: { name: 'pk', type: 'S' },
    ttlAttribute: 'expiresAt',
  },
  /** Tamper-evident audit log: hash-chain entries (CHAIN#<n>/<seq>), chain heads, signed checkpoints. */
  audit: {
    id: 'AuditLog',
    envVar: 'AUDIT_TABLE_NAME',
    localName: 'audit-log',
    partitionKey: { name: 'pk', type: 'S' },
    sortKey: { name: 'sk', type: 'S' },
  },
} as const satisfies Record<string, TableDefinition>;

export type TableKey = keyof typeof TABLES;

/** Physical table name: from the table's environment variable, else its local name. */
export function tableName(table: TableDefinition, env: NodeJS.ProcessEnv = process.env): string {
  return env[table.envVar] || table.localName;
}
