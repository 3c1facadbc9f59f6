import type { TableKey } from '@pipeline/resources';

/** Objects kept outside the tables: a directory (locally) or an S3 bucket. */
export type ObjectTarget =
  { readonly kind: 'file'; readonly dir: string } | { readonly kind: 's3'; readonly bucket: string };

export type HsmProfileName = 'softhsm' | 'cloudhsm';

/** Where the HSM PIN comes from. The PIN itself never lives in configuration. */
export type PinSource =
  | { readonly kind: 'env'; readonly variable: string }
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'secretsmanager'; readonly secretId: string };

/** Where a secret the configuration names is read: a file locally, Secrets Manager on AWS. */
export type SecretSource =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'secretsmanager'; readonly secretId: string };

export interface HsmConfig {
  /** Path of the PKCS#11 module (SoftHSM locally, libcloudhsm_pkcs11.so in the Lambda layer). */
  readonly modulePath: string;
  /** Token label; the slot is found by label because SoftHSM slot ids are random. */
  readonly tokenLabel: string;
  readonly pinSource: PinSource;
  /** Mechanism profile: which wrap mechanism and vendor constants this HSM speaks. */
  readonly profile: HsmProfileName;
  /** Number of PKCS#11 sessions kept open for concurrent operations. */
  readonly sessionPoolSize: number;
  /** Label of the AES key that wraps pool keys; its version is part of the label. */
  readonly wrapKeyLabel: string;
}

/** Endpoint overrides for AWS stand-ins (DynamoDB Local, ElasticMQ, LocalStack). Unset means AWS. */
export interface AwsEndpoints {
  readonly dynamodb?: string;
  readonly sqs?: string;
  readonly lambda?: string;
  readonly secretsmanager?: string;
  readonly ssm?: string;
  readonly s3?: string;
}

export interface AwsConfig {
  readonly region: string;
  readonly endpoints: AwsEndpoints;
}

export interface PoolConfig {
  /** Partitions per key type (`<keyType>#<shard>`): concurrent claimers spread over them. */
  readonly shards: number;
  /** Keys per stored pool item: one claim, write and deletion per bundle instead of per key. */
  readonly bundleSize: number;
  /** Maximum age of a stored key (the TTL of pool items). */
  readonly keyMaxAgeSeconds: number;
  /** Pool empty: generate on the fly (`fallback`) or fail the request with a retry hint (`reject`). */
  readonly emptyPolicy: 'fallback' | 'reject';
  readonly retryAfterSeconds: number;
  /**
   * `fallback`: on-the-fly generations of one key type in flight at once per signer process, and how
   * long a request beyond that waits for a slot or a pool key before it fails POOL_EMPTY (ms).
   */
  readonly fallbackMaxInFlight: number;
  readonly fallbackWaitMs: number;
  /**
   * The API's admission: under `fallback`, open requests of a type it accepts beyond the pool's keys
   * (what on-the-fly generation and keygen serve in time) ...
   */
  readonly admissionOnTheFly: number;
  /** ... and the last keys of a type's capacity, kept for clients below their share. */
  readonly clientReserve: number;
  /** Concurrent key generations while filling. */
  readonly fillParallelism: number;
}

export interface RequestsConfig {
  /** Retention of request records (their TTL). */
  readonly retentionSeconds: number;
  /** How long an attempt owns a request in `signing` before a redelivery may take it over. */
  readonly attemptLeaseSeconds: number;
  /** The reconciler: open requests quiet this long get a fresh message ... */
  readonly reconcileStaleAfterSeconds: number;
  /** ... at most this many times, after which they are failed (DELIVERY_LOST). */
  readonly reconcileMaxRequeues: number;
  /** Most open requests one reconciler run looks at. */
  readonly reconcileBatchLimit: number;
}

export interface AppConfig {
  readonly hsm: HsmConfig;
  readonly aws: AwsConfig;
  readonly pool: PoolConfig;
  readonly requests: RequestsConfig;
  /** Physical table names, by the key of their definition (TABLES). */
  readonly tables: Readonly<Record<TableKey, string>>;
}

export type Env = Readonly<Record<string, string | undefined>>;
