/**
 * What every function spec (`cdk/lib/functions/<name>.ts`) is made of, and the helpers they share: the
 * environment pieces several functions get, and the grants written the same way for each (`FunctionGrants`).
 * `PipelineFunctions` (constructs/functions.ts) turns the specs into functions, roles and schedules.
 */
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as ssm from 'aws-cdk-lib/aws-ssm';
import { QUEUES, TABLES, type ScheduleDefinition, type TableKey } from '@pipeline/resources';
import { ENV } from '@pipeline/config';
import { CLOUDHSM_MODULE_PATH } from '../platform';
import type { StackSettings } from '../settings';
import type { CscSecrets } from '../constructs/csc-secrets';
import type { DssExtSecrets } from '../constructs/dssext-secrets';
import type { HsmAccess } from '../constructs/hsm-access';
import type { IdentityTrust } from '../constructs/identity-trust';
import type { SignQueue } from '../constructs/sign-queue';
import type { Tables } from '../constructs/tables';

/** Namespace of the pool metrics (the Powertools adapter's default) and the service dimension they carry. */
export const METRICS_NAMESPACE = 'SigningPipeline';
export const METRICS_SERVICE = 'signing-pipeline';

/** A handler's folder, `lambdas/handlers/<name>/index.ts`: the function's name and its role's tag. */
export type FunctionName =
  | 'api'
  | 'signer'
  | 'keygen'
  | 'ca'
  | 'revoke'
  | 'reconcile'
  | 'jwks-refresh'
  | 'crl'
  | 'ocsp'
  | 'tsa'
  | 'audit-checkpoint'
  | 'csc'
  | 'dssext';

/** The HSM crypto users: each function that logs in is one of them, and only they read its secret. */
export type CryptoUser = 'pool' | 'ca' | 'ocsp' | 'tsa' | 'revoke';

/**
 * Where a function runs and what it reaches. `hsm`: the HSM client security group, the CloudHSM layer
 * (the PKCS#11 library and pkcs11js, a native addon the bundle cannot contain), and a login as its crypto
 * user. `endpoints-only`: its own security group with a route to the VPC endpoints only. `outside-vpc`:
 * the internet, and nothing in the VPC.
 */
export type FunctionNetwork =
  | { readonly kind: 'hsm'; readonly cryptoUser: CryptoUser }
  | { readonly kind: 'endpoints-only'; readonly securityGroupDescription: string }
  | { readonly kind: 'outside-vpc' };

/** What the specs are given: the stack's parts, and the functions created before them. */
export interface FunctionDeps {
  readonly settings: StackSettings;
  readonly hsm: HsmAccess;
  readonly tables: Tables;
  readonly signQueue: SignQueue;
  readonly identity: IdentityTrust;
  /** The CSC API's secrets, where it is deployed (settings.csc). */
  readonly cscSecrets?: CscSecrets;
  /** The DSS-Ext door's secrets, where it is deployed (settings.dssExt). */
  readonly dssExtSecrets?: DssExtSecrets;
  /** A function created before this one (specs are created in the order constructs/functions.ts lists). */
  fn(name: FunctionName): NodejsFunction;
}

/** The public PKI endpoint as the functions see it (created after them). */
export interface PublicPkiRef {
  readonly baseUrl: string;
  readonly bucket: s3.IBucket;
}

interface SpecBase {
  readonly name: FunctionName;
  /** Whether the deployment has this function; unset: always. */
  deployed?(settings: StackSettings): boolean;
  readonly description: string;
  readonly memorySize: number;
  readonly network: FunctionNetwork;
  /** The function's own variables (the common ones are added: Powertools, log level, source maps). */
  environment(deps: FunctionDeps): Record<string, string>;
  /** Its role's permissions, beyond logs, tracing and the VPC. */
  grants(grant: FunctionGrants): void;
  /** What it needs of the public PKI endpoint, once that exists. */
  connectPublicPki?(grant: FunctionGrants, pki: PublicPkiRef): void;
  /** What it needs of the audit anchors bucket, once that exists. */
  connectAuditAnchors?(grant: FunctionGrants, bucket: s3.IBucket): void;
}

/**
 * One function. A scheduled one takes its timeout and reserved concurrency from its schedule
 * (`SCHEDULES` in lambdas/resources): one run at a time, finished before the next.
 */
export type FunctionSpec = SpecBase &
  (
    | { readonly schedule: ScheduleDefinition }
    | { readonly timeoutSeconds: number; readonly reservedConcurrency?: number }
  );

/** `<TABLE>_TABLE_NAME` variables of the named tables (TABLES[].envVar). */
export function tableEnv(deps: FunctionDeps, ...names: TableKey[]): Record<string, string> {
  return Object.fromEntries(names.map((n) => [TABLES[n].envVar, deps.tables.table(n).tableName]));
}

/** The sign queue's URL (QUEUES[].envVar). */
export function signQueueEnv(deps: FunctionDeps): Record<string, string> {
  return { [QUEUES.signRequests.envVar]: deps.signQueue.queue.queueUrl };
}

/** The CloudHSM client: profile, PKCS#11 module, token. */
function hsmClientEnv(deps: FunctionDeps): Record<string, string> {
  return {
    [ENV.HSM_PROFILE]: 'cloudhsm',
    [ENV.HSM_MODULE_PATH]: CLOUDHSM_MODULE_PATH,
    [ENV.HSM_TOKEN_LABEL]: deps.settings.hsm.tokenLabel,
  };
}

/** Variables naming a crypto user's PIN besides HSM_PIN_SOURCE (the loaders of the CA-side services). */
const SERVICE_PIN_VARIABLE: Partial<Record<CryptoUser, string>> = {
  ca: ENV.CA_HSM_PIN_SOURCE,
  ocsp: ENV.OCSP_HSM_PIN_SOURCE,
  tsa: ENV.TSA_HSM_PIN_SOURCE,
};

/**
 * The PIN source of a crypto user: HSM_PIN_SOURCE, and the service's own variable where its loader has
 * one, both at the same secret, so that nothing in the function's configuration names another user.
 */
function pinEnv(deps: FunctionDeps, user: CryptoUser): Record<string, string> {
  const pin = `secretsmanager:${cryptoUserSecret(deps.hsm, user).secretArn}`;
  const service = SERVICE_PIN_VARIABLE[user];
  return { [ENV.HSM_PIN_SOURCE]: pin, ...(service ? { [service]: pin } : {}) };
}

/** An HSM client logging in as `user`: the client's variables and the user's PIN source. */
export function loginEnv(deps: FunctionDeps, user: CryptoUser): Record<string, string> {
  return { ...hsmClientEnv(deps), ...pinEnv(deps, user) };
}

/**
 * Refuses an environment whose login is not the function's declared crypto user's (or that logs in at
 * all outside the HSM network): the secret's policy admits the declared functions only, so such a
 * function could not log in.
 */
export function checkLogin(
  spec: FunctionSpec,
  deps: FunctionDeps,
  environment: Record<string, string>,
): void {
  const expected =
    spec.network.kind === 'hsm' ? pinEnv(deps, spec.network.cryptoUser)[ENV.HSM_PIN_SOURCE] : undefined;
  if (environment[ENV.HSM_PIN_SOURCE] !== expected) {
    throw new Error(`function ${spec.name}: HSM_PIN_SOURCE is not its crypto user's`);
  }
}

/**
 * The DSS-Ext settings of the identity configuration (loadDssExtConfig): the API, the CA and the door
 * verify DSS-Ext evidence; none where the door is not deployed. Not the door's service key.
 */
export function dssExtEnv(deps: FunctionDeps): Record<string, string> {
  const settings = deps.settings.dssExt;
  if (!settings) return {};
  return {
    [ENV.DSSEXT_BASE_URL]: settings.baseUrl,
    [ENV.DSSEXT_SIGN_SERVICE_ENTITY_ID]: settings.signServiceEntityId,
    ...(settings.spEntityId ? { [ENV.DSSEXT_SP_ENTITY_ID]: settings.spEntityId } : {}),
    [ENV.DSSEXT_CLIENTS]: settings.clients,
    [ENV.DSSEXT_FEDERATION_METADATA]: `secretsmanager:${dssExtSecretsOf(deps).federationMetadata.secretArn}`,
    [ENV.DSSEXT_METADATA_TRUST]: settings.metadataTrust,
    ...(settings.defaultLoa ? { [ENV.DSSEXT_DEFAULT_LOA]: settings.defaultLoa } : {}),
  };
}

/** The pool's crypto user with the pool settings and the wrapping key: the signer and keygen. */
export function poolUserEnv(deps: FunctionDeps): Record<string, string> {
  return {
    ...hsmClientEnv(deps),
    ...poolEnv(deps),
    ...pinEnv(deps, 'pool'),
    [ENV.HSM_WRAP_KEY_LABEL]: deps.settings.hsm.wrapKeyLabel,
  };
}

/** Where the CA certificates are read (the SSM parameters HsmAccess creates). */
export function caCertsEnv(deps: FunctionDeps): Record<string, string> {
  return { [ENV.CA_CERTS_SOURCE]: `ssm:${deps.settings.caCertsParameterPrefix}` };
}

/** The pool settings (sharding, bundles, the empty-pool policy): the API admits by them, the pool user's functions use them. */
export function poolEnv(deps: FunctionDeps): Record<string, string> {
  const { pool } = deps.settings;
  return {
    [ENV.POOL_SHARDS]: String(pool.shards),
    [ENV.POOL_BUNDLE_SIZE]: String(pool.bundleSize),
    [ENV.POOL_EMPTY_POLICY]: pool.emptyPolicy,
    [ENV.POOL_FALLBACK_MAX_IN_FLIGHT]: String(pool.fallbackMaxInFlight),
    [ENV.POOL_FALLBACK_WAIT_MS]: String(pool.fallbackWaitMs),
  };
}

export function cryptoUserSecret(hsm: HsmAccess, user: CryptoUser): secretsmanager.Secret {
  const secrets: Record<CryptoUser, secretsmanager.Secret> = {
    pool: hsm.poolUserSecret,
    ca: hsm.caUserSecret,
    ocsp: hsm.ocspUserSecret,
    tsa: hsm.tsaUserSecret,
    revoke: hsm.revokeUserSecret,
  };
  return secrets[user];
}

type CaCertificate = 'root' | 'issuing' | 'ocsp' | 'tsa';

/** The permissions of one function's role, each kind written once. */
export class FunctionGrants {
  public constructor(
    public readonly fn: NodejsFunction,
    public readonly deps: FunctionDeps,
    private readonly cryptoUser: CryptoUser | undefined,
  ) {}

  public statement(actions: string[], resources: string[], conditions?: Record<string, unknown>): void {
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions, resources, conditions }));
  }

  /**
   * Actions on the table itself only: Table.grant would add `<table>/index/*` for every action once a
   * table has an index, and only the reconciler and the API may query the requests table's index.
   */
  public table(name: TableKey, ...actions: string[]): void {
    this.statement(dynamoActions(actions), [this.tableOf(name).tableArn]);
  }

  /** Item-level: only items whose partition key matches one of `keys` (dynamodb:LeadingKeys). */
  public tableItems(name: TableKey, actions: string[], keys: string[]): void {
    this.statement(dynamoActions(actions), [this.tableOf(name).tableArn], {
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': keys },
    });
  }

  /** Query on one of the table's indexes (TABLES[].globalSecondaryIndexes). */
  public queryIndex(name: TableKey, indexName: string): void {
    this.statement(['dynamodb:Query'], [`${this.tableOf(name).tableArn}/index/${indexName}`]);
  }

  /**
   * The audit log is append-only for every function: read a chain head, put new entries and the moved
   * head (CHAIN# and HEAD# items only: never a checkpoint) in one conditional transaction. No UpdateItem,
   * DeleteItem or Scan: nothing can rewrite it.
   */
  public appendsAudit(): void {
    this.table('audit', 'GetItem');
    this.tableItems('audit', ['PutItem'], ['CHAIN#*', 'HEAD#*']);
  }

  /** The tables' customer-managed key, with the exact actions DynamoDB needs on a caller's behalf. */
  public tableKey(): void {
    this.deps.tables.key.grant(
      this.fn,
      'kms:Decrypt',
      'kms:Encrypt',
      'kms:GenerateDataKey',
      'kms:DescribeKey',
    );
  }

  /** The sign queue (`actions`), with its key for the messages it sends. */
  public sendsToQueue(...actions: string[]): void {
    this.deps.signQueue.queue.grant(this.fn, ...actions);
    this.deps.signQueue.key.grant(this.fn, 'kms:GenerateDataKey', 'kms:Decrypt');
  }

  /** Read its crypto user's secret (the secret's own policy admits its functions only, see HsmAccess). */
  public login(): void {
    if (!this.cryptoUser) throw new Error(`${this.fn.node.id} logs in to no HSM`);
    cryptoUserSecret(this.deps.hsm, this.cryptoUser).grantRead(this.fn);
  }

  /** The CA certificate parameters named, in that order; `read-write` for the publication that renews them. */
  public caCertificates(names: CaCertificate[], access: 'read' | 'read-write' = 'read'): void {
    const { hsm } = this.deps;
    const parameters: Record<CaCertificate, ssm.StringParameter> = {
      root: hsm.caRootCertificate,
      issuing: hsm.caIssuingCertificate,
      ocsp: hsm.caOcspCertificate,
      tsa: hsm.caTsaCertificate,
    };
    for (const name of names) {
      parameters[name].grantRead(this.fn);
      if (access === 'read-write') parameters[name].grantWrite(this.fn);
    }
  }

  /** The identity providers' keys and the registered clients' request-object keys, read only. */
  public readsIdentityKeys(): void {
    for (const parameter of this.deps.identity.parameters) parameter.grantRead(this.fn);
    for (const parameter of this.deps.identity.clientParameters) parameter.grantRead(this.fn);
  }

  /**
   * Read the CSC API's secrets (the key at the identity provider, the registered clients), with their
   * key through Secrets Manager only; their own policies admit the csc function only (CscSecrets).
   */
  public readsCscSecrets(): void {
    const cscSecrets = cscSecretsOf(this.deps);
    for (const secret of [cscSecrets.idpClientKey, cscSecrets.clients]) secret.grantRead(this.fn);
  }

  /**
   * Read the federation's metadata where the DSS-Ext door is deployed (a no-op elsewhere), with its key
   * through Secrets Manager only; its own policy admits the door, the API and the CA only (DssExtSecrets).
   */
  public readsFederationMetadata(): void {
    this.deps.dssExtSecrets?.federationMetadata.grantRead(this.fn);
  }

  /** Read the DSS-Ext door's service key; its own policy admits the door only (DssExtSecrets). */
  public readsDssExtServiceKey(): void {
    dssExtSecretsOf(this.deps).serviceKey.grantRead(this.fn);
  }

  /**
   * Read these objects of `bucket`, and know when one is missing: without s3:ListBucket S3 answers a
   * missing object 403 AccessDenied, not 404 NoSuchKey, and the first CRL or anchor could never be
   * written. ListBucket is unconditioned: S3 checks it on the bucket for a GetObject or HeadObject,
   * where no s3:prefix is in the request to condition on. The names listed are not secret (the PKI
   * bucket is public, anchor keys are checkpoint numbers).
   */
  public readsObjects(bucket: s3.IBucket, keys: string[]): void {
    this.statement(
      ['s3:GetObject'],
      keys.map((key) => bucket.arnForObjects(key)),
    );
    this.statement(['s3:ListBucket'], [bucket.bucketArn]);
  }

  /** Invoke the named functions by their unqualified ARNs (one statement). */
  public invoke(...names: FunctionName[]): void {
    this.statement(
      ['lambda:InvokeFunction'],
      names.map((name) => this.deps.fn(name).functionArn),
    );
  }

  private tableOf(name: TableKey): dynamodb.Table {
    return this.deps.tables.table(name);
  }
}

/** The CSC API's secrets; only a deployment with the CSC API has them. */
export function cscSecretsOf(deps: FunctionDeps): CscSecrets {
  if (!deps.cscSecrets) throw new Error('the CSC API is not deployed (settings.csc)');
  return deps.cscSecrets;
}

/** The DSS-Ext door's secrets; only a deployment with the door has them. */
export function dssExtSecretsOf(deps: FunctionDeps): DssExtSecrets {
  if (!deps.dssExtSecrets) throw new Error('the DSS-Ext door is not deployed (settings.dssExt)');
  return deps.dssExtSecrets;
}

function dynamoActions(actions: string[]): string[] {
  return actions.map((a) => `dynamodb:${a}`);
}
