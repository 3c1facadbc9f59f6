import { resolve } from 'node:path';
import { Duration, RemovalPolicy, Tags } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import {
  SCHEDULES,
  SIGNER_EVENT_SOURCE,
  SIGNER_TIMEOUT_SECONDS,
  TABLES,
  type ScheduleDefinition,
} from '@pipeline/resources';
import { ENV } from '@pipeline/config';
import { PKI_OBJECTS } from '@pipeline/core';
import { ARCHITECTURE, CLOUDHSM_MODULE_PATH, LAMBDA_RUNTIME, NODE_MAJOR } from '../platform';
import type { StackSettings } from '../settings';
import { FUNCTION_ROLE_TAG, allowEndpointTraffic, type HsmAccess } from './hsm-access';
import type { IdentityTrust } from './identity-trust';
import type { SignQueue } from './sign-queue';
import type { Tables } from './tables';

/** Namespace of the pool metrics (the Powertools adapter's default) and the service dimension they carry. */
export const METRICS_NAMESPACE = 'SigningPipeline';
/** The certificate table's items the CA writes (certificate-repository.ts): records and its registers. */
const CA_ITEM_KEYS = ['REQ#*', 'SERIAL#*', 'ASSERTION#*', 'PUBKEY#*'];

export const METRICS_SERVICE = 'signing-pipeline';
/** The CA answers inside the signer's batch: well under the signer's timeout, with room for a cold start. */
const CA_TIMEOUT_SECONDS = 15;

export interface PipelineFunctionsProps {
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  readonly hsm: HsmAccess;
  readonly tables: Tables;
  readonly signQueue: SignQueue;
  readonly identity: IdentityTrust;
  readonly settings: StackSettings;
}

/**
 * The OCSP function's reserved concurrency: its share of the account's, and its cap. Each execution
 * environment signs a certificate state at most once, so this also bounds the signatures per state.
 */
const OCSP_RESERVED_CONCURRENCY = 20;

interface FunctionSpec {
  readonly name:
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
    | 'audit-checkpoint';
  readonly description: string;
  readonly memorySize: number;
  readonly timeout: Duration;
  /** The function's security group in the VPC; undefined: the function runs outside the VPC. */
  readonly securityGroup: ec2.ISecurityGroup | undefined;
  readonly environment: Record<string, string>;
  readonly reservedConcurrency?: number;
  /** Whether the code logs in to the HSM (and so needs the CloudHSM layer with pkcs11js). */
  readonly usesHsm: boolean;
}

/**
 * The handlers, each with its own role holding only what its code calls. Those that log in to the HSM
 * carry the CloudHSM layer (the PKCS#11 library and pkcs11js, a native addon the bundle cannot contain);
 * the API, the revocation function, the reconciler and the JWKS refresher never touch the HSM and do
 * without it.
 */
export class PipelineFunctions extends Construct {
  public readonly api: NodejsFunction;
  public readonly signer: NodejsFunction;
  public readonly signerAlias: lambda.Alias;
  public readonly keygen: NodejsFunction;
  public readonly ca: NodejsFunction;
  public readonly revoke: NodejsFunction;
  public readonly reconcile: NodejsFunction;
  public readonly jwksRefresh: NodejsFunction;
  public readonly crl: NodejsFunction;
  public readonly ocsp: NodejsFunction;
  public readonly tsa: NodejsFunction;
  public readonly auditCheckpoint: NodejsFunction;
  public readonly keygenSchedule: events.Rule;
  public readonly auditCheckpointSchedule: events.Rule;
  public readonly crlSchedule: events.Rule;
  public readonly reconcileSchedule: events.Rule;
  public readonly jwksRefreshSchedule: events.Rule;

  public constructor(
    scope: Construct,
    id: string,
    private readonly props: PipelineFunctionsProps,
  ) {
    super(scope, id);
    const { hsm, tables, signQueue, settings } = props;
    const table = (name: keyof typeof TABLES): dynamodb.Table => tables.table(name);
    const tableEnv = (...names: (keyof typeof TABLES)[]): Record<string, string> =>
      Object.fromEntries(names.map((n) => [TABLES[n].envVar, table(n).tableName]));

    const hsmEnv = {
      [ENV.HSM_PROFILE]: 'cloudhsm',
      [ENV.HSM_MODULE_PATH]: CLOUDHSM_MODULE_PATH,
      [ENV.HSM_TOKEN_LABEL]: settings.hsm.tokenLabel,
    };
    const poolEnv = {
      [ENV.POOL_SHARDS]: String(settings.pool.shards),
      [ENV.POOL_BUNDLE_SIZE]: String(settings.pool.bundleSize),
      [ENV.POOL_EMPTY_POLICY]: settings.pool.emptyPolicy,
      [ENV.POOL_FALLBACK_MAX_IN_FLIGHT]: String(settings.pool.fallbackMaxInFlight),
      [ENV.POOL_FALLBACK_WAIT_MS]: String(settings.pool.fallbackWaitMs),
    };
    const poolUserPin = `secretsmanager:${hsm.poolUserSecret.secretArn}`;
    const caUserPin = `secretsmanager:${hsm.caUserSecret.secretArn}`;
    // Signer and keygen: the pool's crypto user, the pool settings and the wrapping key.
    const poolUserEnv = {
      ...hsmEnv,
      ...poolEnv,
      [ENV.HSM_PIN_SOURCE]: poolUserPin,
      [ENV.HSM_WRAP_KEY_LABEL]: settings.hsm.wrapKeyLabel,
    };

    // The API and the reconciler reach only DynamoDB and SQS: no route to the HSM ports.
    const endpointsOnly = (groupId: string, description: string): ec2.SecurityGroup => {
      const group = new ec2.SecurityGroup(this, groupId, {
        vpc: props.vpc,
        description,
        allowAllOutbound: false,
      });
      allowEndpointTraffic(group);
      return group;
    };
    const apiSecurityGroup = endpointsOnly(
      'ApiSecurityGroup',
      'Signing pipeline API function (no HSM access)',
    );

    // The CA's crypto user, for every function that uses the CA keys (CA, CRL publication, OCSP).
    const caUserEnv = {
      ...hsmEnv,
      // Both point at the CA user: nothing in these functions' configuration names the pool user.
      [ENV.HSM_PIN_SOURCE]: caUserPin,
      [ENV.CA_HSM_PIN_SOURCE]: caUserPin,
      [ENV.CA_CERTS_SOURCE]: `ssm:${settings.caCertsParameterPrefix}`,
    };
    this.crl = this.createFunction({
      name: 'crl',
      usesHsm: true,
      description:
        'Scheduled and after each revocation: renews the OCSP responder certificate, publishes CRLs and CA certificates',
      memorySize: 512,
      timeout: Duration.seconds(SCHEDULES.crl.timeoutSeconds),
      reservedConcurrency: SCHEDULES.crl.reservedConcurrency,
      securityGroup: hsm.clientSecurityGroup,
      environment: { ...caUserEnv, ...tableEnv('certificates', 'audit') },
    });
    // The public responder logs in as its own crypto user, which owns the responder key and nothing else.
    const ocspUserPin = `secretsmanager:${hsm.ocspUserSecret.secretArn}`;
    this.ocsp = this.createFunction({
      name: 'ocsp',
      usesHsm: true,
      description:
        'OCSP responder: good / revoked / unknown from the published CRL and the certificate records, signed once per state by its own key',
      memorySize: 512,
      timeout: Duration.seconds(10),
      // Reserved, and so capped: a flood at the public endpoint can neither take the account's
      // concurrency from the signer nor open more HSM sessions on its cluster than this.
      reservedConcurrency: OCSP_RESERVED_CONCURRENCY,
      securityGroup: hsm.clientSecurityGroup,
      environment: {
        ...hsmEnv,
        [ENV.HSM_PIN_SOURCE]: ocspUserPin,
        [ENV.OCSP_HSM_PIN_SOURCE]: ocspUserPin,
        [ENV.CA_CERTS_SOURCE]: `ssm:${settings.caCertsParameterPrefix}`,
        ...tableEnv('certificates'),
      },
    });
    // The TSA, like the responder, logs in as its own crypto user, which owns the TSA key and nothing else.
    const tsaUserPin = `secretsmanager:${hsm.tsaUserSecret.secretArn}`;
    this.tsa = this.createFunction({
      name: 'tsa',
      usesHsm: true,
      description:
        "Time-stamping authority (RFC 3161): public behind the PKI endpoint, and the signer's for B-T and up",
      memorySize: 512,
      timeout: Duration.seconds(10),
      securityGroup: hsm.clientSecurityGroup,
      environment: {
        ...hsmEnv,
        [ENV.HSM_PIN_SOURCE]: tsaUserPin,
        [ENV.TSA_HSM_PIN_SOURCE]: tsaUserPin,
        [ENV.CA_CERTS_SOURCE]: `ssm:${settings.caCertsParameterPrefix}`,
      },
    });
    this.ca = this.createFunction({
      name: 'ca',
      usesHsm: true,
      description:
        "Issues one-time certificates (signer only): verifies each request's identity assertion and the CSR itself",
      memorySize: 1024,
      timeout: Duration.seconds(CA_TIMEOUT_SECONDS),
      securityGroup: hsm.clientSecurityGroup,
      environment: {
        ...caUserEnv,
        ...props.identity.environment(),
        ...tableEnv('certificates', 'audit'),
      },
    });
    // Revocation apart from issuance: another function, another caller (the API and operators), no CA
    // key. It logs in as its own crypto user, which holds only a share of the audit key: the heads of the
    // audit entries it appends are signed.
    this.revoke = this.createFunction({
      name: 'revoke',
      usesHsm: true,
      description: 'Revokes certificates (API and operators only) and starts the CRL publication',
      memorySize: 256,
      timeout: Duration.seconds(CA_TIMEOUT_SECONDS),
      securityGroup: hsm.clientSecurityGroup,
      environment: {
        ...hsmEnv,
        [ENV.HSM_PIN_SOURCE]: `secretsmanager:${hsm.revokeUserSecret.secretArn}`,
        [ENV.CRL_FUNCTION_NAME]: this.crl.functionArn,
        ...tableEnv('certificates', 'audit'),
      },
    });

    this.api = this.createFunction({
      name: 'api',
      usesHsm: false,
      description: 'Sign request API: validates, records and queues requests; serves results and health',
      memorySize: 512,
      timeout: Duration.seconds(29),
      securityGroup: apiSecurityGroup,
      environment: {
        ...poolEnv,
        ...props.identity.environment(),
        SIGN_QUEUE_URL: signQueue.queue.queueUrl,
        [ENV.REVOKE_FUNCTION_NAME]: this.revoke.functionArn,
        ...tableEnv('requests', 'keyPool', 'demand', 'assertions'),
      },
    });

    this.signer = this.createFunction({
      name: 'signer',
      usesHsm: true,
      description: 'Signs queued requests with pooled one-time keys (SQS batches, partial failures)',
      memorySize: 1024,
      timeout: Duration.seconds(SIGNER_TIMEOUT_SECONDS),
      securityGroup: hsm.clientSecurityGroup,
      environment: {
        ...poolUserEnv,
        [ENV.CA_FUNCTION_NAME]: this.ca.functionArn,
        [ENV.TSA_FUNCTION_NAME]: this.tsa.functionArn,
        [ENV.OCSP_FUNCTION_NAME]: this.ocsp.functionArn,
        // A delivery that meets a live lease holds its message until the lease ends (ChangeMessageVisibility,
        // granted with the event source's consume permissions).
        SIGN_QUEUE_URL: signQueue.queue.queueUrl,
        [ENV.SIGNER_CONCURRENCY]: String(SIGNER_EVENT_SOURCE.batchSize),
        ...tableEnv('requests', 'keyPool', 'audit'),
      },
    });

    this.keygen = this.createFunction({
      name: 'keygen',
      usesHsm: true,
      description: 'Scheduled: removes expired pool keys and fills the pool to its targets',
      memorySize: 1024,
      timeout: Duration.seconds(SCHEDULES.keygen.timeoutSeconds),
      reservedConcurrency: SCHEDULES.keygen.reservedConcurrency,
      securityGroup: hsm.clientSecurityGroup,
      environment: {
        ...poolUserEnv,
        // Forecast-driven by default; POOL_TARGETS serves the `targets` policy and the dashboard's targets.
        [ENV.KEYGEN_POLICY]: 'forecast',
        [ENV.POOL_TARGETS]: settings.pool.targetsSpec,
        ...tableEnv('keyPool', 'demand', 'audit'),
      },
    });

    // The checkpointer: the audit key is on the pool user's token; it needs neither pool nor wrapping key.
    this.auditCheckpoint = this.createFunction({
      name: 'audit-checkpoint',
      usesHsm: true,
      description:
        'Scheduled (looping within the minute): signs a checkpoint of every audit chain head while they move, anchors it in the Object Lock bucket',
      memorySize: 512,
      timeout: Duration.seconds(SCHEDULES.auditCheckpoint.timeoutSeconds),
      reservedConcurrency: SCHEDULES.auditCheckpoint.reservedConcurrency,
      securityGroup: hsm.clientSecurityGroup,
      environment: {
        ...hsmEnv,
        [ENV.HSM_PIN_SOURCE]: poolUserPin,
        [ENV.AUDIT_CHECKPOINT_INTERVAL_SECONDS]: String(settings.audit.checkpointIntervalSeconds),
        ...tableEnv('audit'),
      },
    });

    this.reconcile = this.createFunction({
      name: 'reconcile',
      usesHsm: false,
      description:
        'Scheduled: requeues sign requests left open without a message, fails those requeues cannot finish',
      memorySize: 256,
      timeout: Duration.seconds(SCHEDULES.reconcile.timeoutSeconds),
      reservedConcurrency: SCHEDULES.reconcile.reservedConcurrency,
      securityGroup: endpointsOnly('ReconcileSecurityGroup', 'Signing pipeline reconciler (no HSM access)'),
      environment: {
        SIGN_QUEUE_URL: signQueue.queue.queueUrl,
        ...tableEnv('requests'),
      },
    });

    // The only function outside the VPC: it fetches the identity providers' keys from the internet and
    // writes them to SSM; it reaches no table, queue or HSM.
    this.jwksRefresh = this.createFunction({
      name: 'jwks-refresh',
      usesHsm: false,
      description:
        "Scheduled: copies the trusted identity providers' signing keys (JWKS) into SSM parameters",
      memorySize: 256,
      timeout: Duration.seconds(SCHEDULES.jwksRefresh.timeoutSeconds),
      reservedConcurrency: SCHEDULES.jwksRefresh.reservedConcurrency,
      securityGroup: undefined,
      environment: props.identity.environment(),
    });

    this.grantAccess();
    this.signerAlias = this.createSignerAlias();
    this.keygenSchedule = this.createSchedule(SCHEDULES.keygen, this.keygen);
    this.reconcileSchedule = this.createSchedule(SCHEDULES.reconcile, this.reconcile);
    this.jwksRefreshSchedule = this.createSchedule(SCHEDULES.jwksRefresh, this.jwksRefresh);
    this.crlSchedule = this.createSchedule(SCHEDULES.crl, this.crl);
    this.auditCheckpointSchedule = this.createSchedule(SCHEDULES.auditCheckpoint, this.auditCheckpoint);
  }

  private createFunction(spec: FunctionSpec): NodejsFunction {
    const id = spec.name.replace(/(^|-)([a-z])/g, (_, _dash: string, c: string) => c.toUpperCase());
    const logGroup = new logs.LogGroup(this, `${id}Logs`, {
      retention: logs.RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const role = new iam.Role(this, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `signing pipeline ${spec.name} function`,
      managedPolicies: [
        iam.ManagedPolicy.fromAwsManagedPolicyName(
          spec.securityGroup
            ? 'service-role/AWSLambdaVPCAccessExecutionRole'
            : 'service-role/AWSLambdaBasicExecutionRole',
        ),
      ],
    });
    // The crypto users' secrets refuse every role so tagged but their own functions' (HsmAccess).
    Tags.of(role).add(FUNCTION_ROLE_TAG, spec.name);
    return new NodejsFunction(this, id, {
      entry: resolve(__dirname, `../../../lambdas/handlers/${spec.name}/index.ts`),
      handler: 'handler',
      description: spec.description,
      runtime: LAMBDA_RUNTIME,
      architecture: ARCHITECTURE,
      memorySize: spec.memorySize,
      timeout: spec.timeout,
      reservedConcurrentExecutions: spec.reservedConcurrency,
      // X-Ray traces of every invocation (the Lambda service's segments; the role gets PutTraceSegments).
      tracing: lambda.Tracing.ACTIVE,
      role,
      logGroup,
      ...(spec.securityGroup
        ? {
            vpc: this.props.vpc,
            vpcSubnets: this.props.subnets,
            securityGroups: [spec.securityGroup],
            allowPublicSubnet: false,
          }
        : {}),
      layers: spec.usesHsm ? [this.props.hsm.layer] : [],
      environment: {
        POWERTOOLS_SERVICE_NAME: METRICS_SERVICE,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
        ...spec.environment,
      },
      bundling: {
        // Local esbuild (a devDependency); the AWS SDK is bundled at the pinned versions, pkcs11js comes
        // from the layer (/opt/nodejs/node_modules) because it is a native addon.
        externalModules: ['pkcs11js'],
        format: OutputFormat.CJS,
        target: `node${NODE_MAJOR}`,
        minify: true,
        sourceMap: true,
      },
    });
  }

  private grantAccess(): void {
    const { tables, signQueue, hsm, identity } = this.props;
    const requests = tables.table('requests');
    const pool = tables.table('keyPool');
    const certificates = tables.table('certificates');
    const demand = tables.table('demand');
    const audit = tables.table('audit');
    // On the table itself only: Table.grant would add `<table>/index/*` for every action once a table has
    // an index, and only the reconciler and the API may query the requests table's index.
    const allow = (fn: NodejsFunction, target: dynamodb.Table, ...actions: string[]): void => {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: actions.map((a) => `dynamodb:${a}`),
          resources: [target.tableArn],
        }),
      );
    };
    // Item-level: only items whose partition key matches (dynamodb:LeadingKeys).
    const allowOnKeys = (
      fn: NodejsFunction,
      target: dynamodb.Table,
      actions: string[],
      keys: string[],
    ): void => {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: actions.map((a) => `dynamodb:${a}`),
          resources: [target.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': keys } },
        }),
      );
    };
    // The audit log is append-only for every function: read a chain head, put new entries and the moved
    // head (CHAIN# and HEAD# items only: never a checkpoint) in one conditional transaction. No
    // UpdateItem, DeleteItem or Scan: nothing can rewrite it.
    const appendsAudit = (fn: NodejsFunction): void => {
      allow(fn, audit, 'GetItem');
      allowOnKeys(fn, audit, ['PutItem'], ['CHAIN#*', 'HEAD#*']);
    };
    // The tables' customer-managed key, with the exact actions DynamoDB needs on a caller's behalf.
    const tableKey = (fn: NodejsFunction): void => {
      tables.key.grant(fn, 'kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:DescribeKey');
    };
    // API: create/read/discard request records (and read open ones' key type and client, for admission);
    // read pool counters (BatchGetItem of `#COUNT` items only:
    // no Query, so it cannot enumerate wrapped keys, and no writes to the pool). Queue: send and depth.
    allow(this.api, requests, 'PutItem', 'GetItem', 'DeleteItem', 'BatchGetItem');
    allow(this.api, pool, 'BatchGetItem');
    // Demand history: one atomic counter increment per accepted request (the forecast's input).
    allow(this.api, demand, 'UpdateItem');
    // Identity assertions: one conditional put per accepted assertion (single use), and the issuers' keys.
    allow(this.api, tables.table('assertions'), 'PutItem');
    for (const parameter of identity.parameters) {
      // The API refuses bad assertions early; the CA verifies them again before it certifies.
      parameter.grantRead(this.api);
      parameter.grantRead(this.ca);
      // The refresher reads a parameter to write it only when the keys changed.
      parameter.grantRead(this.jwksRefresh);
      parameter.grantWrite(this.jwksRefresh);
    }
    // Registered clients' request-object keys: kept by operators, read by the API and the CA only.
    for (const parameter of identity.clientParameters) {
      parameter.grantRead(this.api);
      parameter.grantRead(this.ca);
    }
    tableKey(this.api);
    signQueue.queue.grant(this.api, 'sqs:SendMessage', 'sqs:GetQueueAttributes');
    signQueue.key.grant(this.api, 'kms:GenerateDataKey', 'kms:Decrypt');
    // Signer: run requests through their states; claim pooled keys (query + conditional delete + counter).
    // Its queue permissions come from the event source mapping (receive, delete, decrypt).
    allow(this.signer, requests, 'GetItem', 'UpdateItem');
    allow(this.signer, pool, 'Query', 'DeleteItem', 'UpdateItem');
    appendsAudit(this.signer);
    tableKey(this.signer);
    hsm.poolUserSecret.grantRead(this.signer);
    // The unqualified ARN only: the signer calls the CA function by that ARN.
    this.signer.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        // Certificates; and for B-T and B-LT, time-stamps and the new certificate's OCSP response.
        resources: [this.ca.functionArn, this.tsa.functionArn, this.ocsp.functionArn],
      }),
    );
    // Keygen: add keys (batch write), remove expired ones, maintain and read counters.
    allow(this.keygen, pool, 'BatchWriteItem', 'BatchGetItem', 'Query', 'DeleteItem', 'UpdateItem');
    // Forecast input (demand history) and its own measured keygen rate.
    allow(this.keygen, demand, 'Query', 'GetItem', 'PutItem');
    // Batch and expiry events.
    appendsAudit(this.keygen);
    tableKey(this.keygen);
    hsm.poolUserSecret.grantRead(this.keygen);
    // Checkpointer: every chain head in one BatchGetItem, the last checkpoint, a new one (conditional
    // puts of CHECKPOINT items only). The audit key is the pool user's; its anchors bucket comes with
    // connectAuditAnchors.
    allow(this.auditCheckpoint, audit, 'GetItem', 'BatchGetItem');
    allowOnKeys(this.auditCheckpoint, audit, ['PutItem'], ['CHECKPOINT', 'CHECKPOINT#HEAD']);
    tableKey(this.auditCheckpoint);
    hsm.poolUserSecret.grantRead(this.auditCheckpoint);
    // CA: no request record (it decides on the evidence it verifies); read its certificates and registers
    // (one BatchGetItem), record a certificate with its register entries (a transaction of puts): its own
    // item kinds only, never a CRL number or anything else in the table. A release marks the request's
    // certificate, a replacement marks the old serial superseded: updates of those item kinds only.
    allow(this.ca, certificates, 'GetItem', 'BatchGetItem');
    allowOnKeys(this.ca, certificates, ['PutItem'], CA_ITEM_KEYS);
    allowOnKeys(this.ca, certificates, ['UpdateItem'], ['REQ#*', 'SERIAL#*']);
    appendsAudit(this.ca);
    tableKey(this.ca);
    // Revocation: one conditional update of a serial's record, the statuses it reports; for a client, the
    // request's certificate and owner it reads, and the owner it registers for the API.
    allowOnKeys(this.revoke, certificates, ['UpdateItem'], ['SERIAL#*']);
    allowOnKeys(this.revoke, certificates, ['BatchGetItem'], ['SERIAL#*', 'REQ#*', 'OWNER#*']);
    allowOnKeys(this.revoke, certificates, ['PutItem'], ['OWNER#*']);
    appendsAudit(this.revoke);
    tableKey(this.revoke);
    hsm.revokeUserSecret.grantRead(this.revoke);
    const caUser = (fn: NodejsFunction, writesCertificates = false): void => {
      hsm.caUserSecret.grantRead(fn);
      for (const parameter of [
        hsm.caRootCertificate,
        hsm.caIssuingCertificate,
        hsm.caOcspCertificate,
        hsm.caTsaCertificate,
      ]) {
        parameter.grantRead(fn);
        if (writesCertificates) parameter.grantWrite(fn);
      }
    };
    caUser(this.ca);
    // After a revocation the revocation function starts the publication (asynchronous invoke).
    this.revoke.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [this.crl.functionArn] }),
    );
    // The API may revoke (never issue); the signer may issue (never revoke).
    this.api.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [this.revoke.functionArn] }),
    );
    // CRL publication: revoked serials from the sparse index, CRL numbers from their counters; renewing
    // the OCSP responder certificate writes the CA certificate parameters.
    const revokedIndex = TABLES.certificates.globalSecondaryIndexes[0].indexName;
    this.crl.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [`${certificates.tableArn}/index/${revokedIndex}`],
      }),
    );
    allowOnKeys(this.crl, certificates, ['UpdateItem'], ['CRL#*']);
    // The statuses of published entries the records no longer list (revocation is monotonic), and the
    // audit events saying so.
    allowOnKeys(this.crl, certificates, ['BatchGetItem'], ['SERIAL#*']);
    appendsAudit(this.crl);
    tableKey(this.crl);
    caUser(this.crl, true);
    // OCSP: the statuses of the serials asked about (SERIAL# items only: never a REQ# record with its
    // subject's personal number); its own crypto user; the CA certificates, read only.
    allowOnKeys(this.ocsp, certificates, ['BatchGetItem'], ['SERIAL#*']);
    tableKey(this.ocsp);
    hsm.ocspUserSecret.grantRead(this.ocsp);
    for (const parameter of [hsm.caRootCertificate, hsm.caIssuingCertificate, hsm.caOcspCertificate]) {
      parameter.grantRead(this.ocsp);
    }
    // TSA: its own crypto user and the certificates (its own among them), read only; no table.
    hsm.tsaUserSecret.grantRead(this.tsa);
    for (const parameter of [hsm.caRootCertificate, hsm.caIssuingCertificate, hsm.caTsaCertificate]) {
      parameter.grantRead(this.tsa);
    }
    // Reconciler: list open requests (the sparse index), read one, count a requeue or fail it (conditional
    // updates); send a fresh message. No access to the pool, the certificates, the audit log or the HSM.
    allow(this.reconcile, requests, 'GetItem', 'UpdateItem');
    // The sparse index of open requests: the reconciler lists them, the API counts them per key type and
    // client for its admission (then reads those two attributes with BatchGetItem).
    const openIndex = TABLES.requests.globalSecondaryIndexes[0].indexName;
    for (const fn of [this.reconcile, this.api]) {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['dynamodb:Query'],
          resources: [`${requests.tableArn}/index/${openIndex}`],
        }),
      );
    }
    tableKey(this.reconcile);
    signQueue.queue.grant(this.reconcile, 'sqs:SendMessage');
    signQueue.key.grant(this.reconcile, 'kms:GenerateDataKey', 'kms:Decrypt');
    // Each crypto user's secret names the functions that log in as it, in its own resource policy: no
    // other function can read it, whatever a later grant on its role says.
    hsm.onlyReadBy(hsm.poolUserSecret, [this.signer, this.keygen, this.auditCheckpoint]);
    hsm.onlyReadBy(hsm.caUserSecret, [this.ca, this.crl]);
    hsm.onlyReadBy(hsm.ocspUserSecret, [this.ocsp]);
    hsm.onlyReadBy(hsm.tsaUserSecret, [this.tsa]);
    hsm.onlyReadBy(hsm.revokeUserSecret, [this.revoke]);
  }

  /**
   * The public PKI endpoint, created after the functions (its OCSP origin is the ocsp function): the CA
   * and the publication put its URL into certificates; the crl function writes to its bucket.
   */
  public connectPublicPki(pki: { readonly baseUrl: string; readonly bucket: s3.IBucket }): void {
    // Not the OCSP responder: its answers name no URL, and the distribution depends on it.
    for (const fn of [this.ca, this.crl]) fn.addEnvironment('PKI_BASE_URL', pki.baseUrl);
    // Both read the published CRL back: the publication keeps its entries, the responder answers from it.
    for (const fn of [this.crl, this.ocsp, this.signer])
      fn.addEnvironment('PKI_PUBLISH_TARGET', `s3:${pki.bucket.bucketName}`);
    // The signer reads the root's CRL for B-LT validation data (the issuing CA's and the TSA's status).
    this.signer.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject'],
        resources: [pki.bucket.arnForObjects('root.crl')],
      }),
    );
    // Exactly the published objects, nothing else in the bucket.
    this.crl.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:PutObject'],
        resources: Object.keys(PKI_OBJECTS).map((name) => pki.bucket.arnForObjects(name)),
      }),
    );
    for (const fn of [this.crl, this.ocsp]) {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['s3:GetObject'],
          resources: [pki.bucket.arnForObjects('issuing.crl')],
        }),
      );
    }
  }

  /**
   * The checkpointer writes anchors (never replacing one: Object Lock keeps every version) and reads one
   * back when a write finds its key taken. Nothing else may touch the bucket.
   */
  public connectAuditAnchors(bucket: s3.IBucket): void {
    this.auditCheckpoint.addEnvironment('AUDIT_ANCHOR_TARGET', `s3:${bucket.bucketName}`);
    this.auditCheckpoint.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:PutObject', 's3:GetObject'],
        resources: [bucket.arnForObjects('checkpoints/*')],
      }),
    );
  }

  /** Provisioned concurrency keeps HSM logins warm; the queue feeds the alias, never $LATEST. */
  private createSignerAlias(): lambda.Alias {
    const { signer: signerSettings } = this.props.settings;
    const alias = new lambda.Alias(this, 'SignerLive', {
      aliasName: 'live',
      version: this.signer.currentVersion,
      provisionedConcurrentExecutions: signerSettings.provisionedConcurrency || undefined,
    });
    if (signerSettings.scaling.length > 0) {
      const base = signerSettings.provisionedConcurrency;
      const peak = Math.max(base, ...signerSettings.scaling.map((w) => w.max));
      const scaling = alias.addAutoScaling({ minCapacity: base, maxCapacity: peak });
      for (const window of signerSettings.scaling) {
        scaling.scaleOnSchedule(window.name, {
          schedule: appscaling.Schedule.expression(`cron(${window.cron})`),
          minCapacity: window.min,
          maxCapacity: window.max,
        });
      }
    }
    alias.addEventSource(
      new SqsEventSource(this.props.signQueue.queue, {
        batchSize: SIGNER_EVENT_SOURCE.batchSize,
        maxBatchingWindow:
          SIGNER_EVENT_SOURCE.maxBatchingWindowSeconds > 0
            ? Duration.seconds(SIGNER_EVENT_SOURCE.maxBatchingWindowSeconds)
            : undefined,
        maxConcurrency: SIGNER_EVENT_SOURCE.maxConcurrency,
        reportBatchItemFailures: SIGNER_EVENT_SOURCE.reportBatchItemFailures,
      }),
    );
    return alias;
  }

  /** A scheduled function: one run at a time (reserved concurrency 1), never queued behind a busy one. */
  private createSchedule(definition: ScheduleDefinition, fn: NodejsFunction): events.Rule {
    // A run that finds the function still busy is dropped, not queued for hours: the next scheduled run
    // does the same work.
    fn.configureAsyncInvoke({
      retryAttempts: 0,
      maxEventAge: Duration.minutes(definition.rateMinutes),
    });
    return new events.Rule(this, definition.id, {
      description: definition.description,
      schedule: events.Schedule.rate(Duration.minutes(definition.rateMinutes)),
      targets: [new targets.LambdaFunction(fn, { retryAttempts: 0 })],
    });
  }
}
