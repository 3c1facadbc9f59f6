import { resolve } from 'node:path';
import { Duration, RemovalPolicy, Stack, Tags } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { ScheduleDefinition } from '@pipeline/resources';
import { api } from '../functions/api';
import { auditCheckpoint } from '../functions/audit-checkpoint';
import { ca } from '../functions/ca';
import { crl } from '../functions/crl';
import { csc } from '../functions/csc';
import { dssext } from '../functions/dssext';
import { jwksRefresh } from '../functions/jwks-refresh';
import { keygen } from '../functions/keygen';
import { ocsp } from '../functions/ocsp';
import { reconcile } from '../functions/reconcile';
import { revoke } from '../functions/revoke';
import { tsa } from '../functions/tsa';
import { createSignerAlias, signer } from '../functions/signer';
import {
  FunctionGrants,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
  checkLogin,
  cryptoUserSecret,
  cscSecretsOf,
  dssExtSecretsOf,
  type CryptoUser,
  type FunctionDeps,
  type FunctionName,
  type FunctionSpec,
  type PublicPkiRef,
} from '../functions/spec';
import { DeploymentSettingsError } from '../errors';
import { ARCHITECTURE, LAMBDA_RUNTIME, NODE_MAJOR } from '../platform';
import type { StackSettings } from '../settings';
import { FUNCTION_ROLE_TAG, allowEndpointTraffic, type HsmAccess } from './hsm-access';
import type { CscSecrets } from './csc-secrets';
import type { DssExtSecrets } from './dssext-secrets';
import type { IdentityTrust } from './identity-trust';
import type { SignQueue } from './sign-queue';
import type { Tables } from './tables';

export interface PipelineFunctionsProps {
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  readonly hsm: HsmAccess;
  readonly tables: Tables;
  readonly signQueue: SignQueue;
  readonly identity: IdentityTrust;
  /** Where the CSC API is deployed (settings.csc). */
  readonly cscSecrets?: CscSecrets;
  /** Where the DSS-Ext door is deployed (settings.dssExt). */
  readonly dssExtSecrets?: DssExtSecrets;
  readonly settings: StackSettings;
}

/**
 * Every function's spec (cdk/lib/functions/<name>.ts), in the order they are created: a spec may name
 * only functions before it (the revocation function the publication's, the API the revocation's, the
 * signer the CA's, TSA's and responder's).
 */
export const FUNCTION_SPECS: readonly FunctionSpec[] = [
  ca,
  crl,
  ocsp,
  tsa,
  revoke,
  api,
  csc,
  dssext,
  signer,
  keygen,
  auditCheckpoint,
  reconcile,
  jwksRefresh,
];

/** Lambda's limit on a function's environment variables: names and values together, in bytes. */
export const LAMBDA_ENVIRONMENT_LIMIT = 4096;

/**
 * What a reference (a Ref or Fn::GetAtt: an ARN, a table name, a queue URL) is counted as before
 * CloudFormation resolves it: the stack's ARNs and queue URLs are about this long.
 */
const REFERENCE_BYTES = 110;

/**
 * The size of a function's environment as CloudFormation will hand it to Lambda, from the template's
 * `Variables` (references estimated): a function over LAMBDA_ENVIRONMENT_LIMIT fails the deploy half-way,
 * so the synth refuses it. The DSS-Ext settings (PEM certificates) are what can grow it.
 */
export function environmentBytes(variables: Record<string, unknown>): number {
  const size = (value: unknown): number => {
    if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
    if (typeof value === 'number' || typeof value === 'boolean') return String(value).length;
    if (value && typeof value === 'object' && 'Fn::Join' in value) {
      const [separator, parts] = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
      return parts.reduce<number>((n, part) => n + size(part), 0) + separator.length * (parts.length - 1);
    }
    return REFERENCE_BYTES;
  };
  return Object.entries(variables).reduce((n, [name, value]) => n + name.length + size(value), 0);
}

/** Lambda keeps this much of an account's concurrency unreserved; a deploy reserving into it fails. */
export const LAMBDA_UNRESERVED_MINIMUM = 100;

/**
 * Reserved concurrency of the specs plus the signer's provisioned concurrency at its highest scheduled
 * window, against the account's quota: refused at synth, with the keys to change, rather than failing a
 * deploy half-way ("decreases account's UnreservedConcurrentExecution below its minimum value").
 */
export function checkConcurrency(specs: readonly FunctionSpec[], settings: StackSettings): void {
  const reserved = specs.reduce(
    (sum, spec) =>
      sum + ('schedule' in spec ? spec.schedule.reservedConcurrency : (spec.reservedConcurrency ?? 0)),
    0,
  );
  const { provisionedConcurrency, scaling } = settings.signer;
  const provisioned = Math.max(provisionedConcurrency, ...scaling.map((w) => w.max));
  const available = settings.lambdaConcurrencyQuota - LAMBDA_UNRESERVED_MINIMUM;
  if (reserved + provisioned > available) {
    throw new DeploymentSettingsError(
      `the functions reserve ${reserved} and the signer provisions up to ${provisioned} concurrent executions, ` +
        `more than the ${available} that lambdaConcurrencyQuota=${settings.lambdaConcurrencyQuota} leaves above ` +
        `Lambda's ${LAMBDA_UNRESERVED_MINIMUM} unreserved: raise the account's quota (Service Quotas, ` +
        '"Concurrent executions") and lambdaConcurrencyQuota, or lower signerProvisionedConcurrency and signerScheduledScaling',
      'lambdaConcurrencyQuota',
    );
  }
}

/**
 * The handlers, each with its own role holding only what its code calls, built from their specs: the
 * common parts here (bundling, logs, tracing, role, network, schedule), the rest in each spec.
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
  /** Where the CSC API is deployed (settings.csc). */
  public readonly csc?: NodejsFunction;
  /** Where the DSS-Ext door is deployed (settings.dssExt). */
  public readonly dssext?: NodejsFunction;
  /** The log groups of the functions that log in to an HSM (spec network `hsm`). */
  public readonly hsmLogGroups: logs.ILogGroup[] = [];
  /** The scheduled functions' rules, by function. */
  public readonly schedules: Partial<Record<FunctionName, events.Rule>> = {};
  private readonly created = new Map<FunctionName, NodejsFunction>();
  private readonly deps: FunctionDeps;
  /** FUNCTION_SPECS this deployment has. */
  private readonly specs: readonly FunctionSpec[];

  public constructor(
    scope: Construct,
    id: string,
    private readonly props: PipelineFunctionsProps,
  ) {
    super(scope, id);
    const { hsm, tables, signQueue, identity, cscSecrets, dssExtSecrets, settings } = props;
    this.deps = {
      hsm,
      tables,
      signQueue,
      identity,
      cscSecrets,
      dssExtSecrets,
      settings,
      fn: (name) => this.fn(name),
    };
    this.specs = FUNCTION_SPECS.filter((spec) => spec.deployed?.(settings) ?? true);
    checkConcurrency(this.specs, settings);
    for (const spec of this.specs) this.created.set(spec.name, this.createFunction(spec));
    for (const spec of this.specs) spec.grants(this.grantsOf(spec));
    this.restrictCryptoUserSecrets();
    if (this.created.has('csc')) cscSecretsOf(this.deps).onlyReadBy(this.fn('csc'));
    if (this.created.has('dssext')) {
      const door = this.fn('dssext');
      dssExtSecretsOf(this.deps).onlyReadBy(door, [door, this.fn('api'), this.fn('ca')]);
    }
    this.api = this.fn('api');
    this.signer = this.fn('signer');
    this.keygen = this.fn('keygen');
    this.ca = this.fn('ca');
    this.revoke = this.fn('revoke');
    this.reconcile = this.fn('reconcile');
    this.jwksRefresh = this.fn('jwks-refresh');
    this.crl = this.fn('crl');
    this.ocsp = this.fn('ocsp');
    this.tsa = this.fn('tsa');
    this.auditCheckpoint = this.fn('audit-checkpoint');
    this.csc = this.created.get('csc');
    this.dssext = this.created.get('dssext');
    this.signerAlias = createSignerAlias(this, this.signer, this.deps);
    this.node.addValidation({ validate: () => this.oversizedEnvironments() });
    for (const spec of this.specs) {
      if ('schedule' in spec)
        this.schedules[spec.name] = this.createSchedule(spec.schedule, this.fn(spec.name));
    }
  }

  /**
   * The public PKI endpoint, created after the functions (its OCSP origin is the ocsp function): the CA
   * and the publication put its URL into certificates; the publication writes to its bucket.
   */
  public connectPublicPki(pki: PublicPkiRef): void {
    for (const spec of this.specs) spec.connectPublicPki?.(this.grantsOf(spec), pki);
  }

  /** The audit anchors bucket, created after the functions. */
  public connectAuditAnchors(bucket: s3.IBucket): void {
    for (const spec of this.specs) spec.connectAuditAnchors?.(this.grantsOf(spec), bucket);
  }

  /** Each function whose environment, as it stands at synth, is over Lambda's limit. */
  private oversizedEnvironments(): string[] {
    return [...this.created.entries()].flatMap(([name, fn]) => {
      const cfn = fn.node.defaultChild as lambda.CfnFunction;
      // The L1 property, resolved: intrinsics in CloudFormation's form, property names in CDK's.
      const variables =
        (Stack.of(this).resolve(cfn.environment) as { variables?: Record<string, unknown> } | undefined)
          ?.variables ?? {};
      const bytes = environmentBytes(variables);
      if (bytes <= LAMBDA_ENVIRONMENT_LIMIT) return [];
      const dssExt = 'DSSEXT_CLIENTS' in variables;
      return [
        `function ${name}: its environment variables come to about ${bytes} bytes, over Lambda's ` +
          `${LAMBDA_ENVIRONMENT_LIMIT}; the deploy would fail` +
          (dssExt
            ? ': dssExtClients and dssExtMetadataTrust (PEM certificates) are in it, fewer or EC certificates fit'
            : ''),
      ];
    });
  }

  private fn(name: FunctionName): NodejsFunction {
    const fn = this.created.get(name);
    if (!fn) throw new Error(`function ${name} is not created yet: list it earlier in FUNCTION_SPECS`);
    return fn;
  }

  private grantsOf(spec: FunctionSpec): FunctionGrants {
    const user = spec.network.kind === 'hsm' ? spec.network.cryptoUser : undefined;
    return new FunctionGrants(this.fn(spec.name), this.deps, user);
  }

  /**
   * Each crypto user's secret names the functions that log in as it, in its own resource policy: no
   * other function can read it, whatever a later grant on its role says.
   */
  private restrictCryptoUserSecrets(): void {
    const users = new Map<CryptoUser, NodejsFunction[]>();
    for (const spec of this.specs) {
      if (spec.network.kind !== 'hsm') continue;
      const user = spec.network.cryptoUser;
      users.set(user, [...(users.get(user) ?? []), this.fn(spec.name)]);
    }
    for (const [user, functions] of users)
      this.props.hsm.onlyReadBy(cryptoUserSecret(this.props.hsm, user), functions);
  }

  private createFunction(spec: FunctionSpec): NodejsFunction {
    const id = spec.name.replace(/(^|-)([a-z])/g, (_, _dash: string, c: string) => c.toUpperCase());
    const logGroup = new logs.LogGroup(this, `${id}Logs`, {
      retention: logs.RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    if (spec.network.kind === 'hsm') this.hsmLogGroups.push(logGroup);
    const inVpc = spec.network.kind !== 'outside-vpc';
    const role = new iam.Role(this, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `signing pipeline ${spec.name} function`,
      managedPolicies: [
        iam.ManagedPolicy.fromAwsManagedPolicyName(
          inVpc ? 'service-role/AWSLambdaVPCAccessExecutionRole' : 'service-role/AWSLambdaBasicExecutionRole',
        ),
      ],
    });
    // The crypto users' secrets refuse every role so tagged but their own functions' (HsmAccess).
    Tags.of(role).add(FUNCTION_ROLE_TAG, spec.name);
    const securityGroup = this.securityGroupOf(spec, id);
    const environment = spec.environment(this.deps);
    checkLogin(spec, this.deps, environment);
    return new NodejsFunction(this, id, {
      entry: resolve(__dirname, `../../../lambdas/handlers/${spec.name}/index.ts`),
      handler: 'handler',
      description: spec.description,
      runtime: LAMBDA_RUNTIME,
      architecture: ARCHITECTURE,
      memorySize: spec.memorySize,
      ...('schedule' in spec
        ? {
            timeout: Duration.seconds(spec.schedule.timeoutSeconds),
            reservedConcurrentExecutions: spec.schedule.reservedConcurrency,
          }
        : {
            timeout: Duration.seconds(spec.timeoutSeconds),
            reservedConcurrentExecutions: spec.reservedConcurrency,
          }),
      // X-Ray traces of every invocation (the Lambda service's segments; the role gets PutTraceSegments).
      tracing: lambda.Tracing.ACTIVE,
      role,
      logGroup,
      ...(securityGroup
        ? {
            vpc: this.props.vpc,
            vpcSubnets: this.props.subnets,
            securityGroups: [securityGroup],
            allowPublicSubnet: false,
          }
        : {}),
      layers: spec.network.kind === 'hsm' ? [this.props.hsm.layer] : [],
      environment: {
        POWERTOOLS_SERVICE_NAME: METRICS_SERVICE,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
        ...environment,
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

  /** The HSM client group, or a group of its own that reaches the VPC endpoints only, or none. */
  private securityGroupOf(spec: FunctionSpec, id: string): ec2.ISecurityGroup | undefined {
    const { network } = spec;
    if (network.kind === 'hsm') return this.props.hsm.clientSecurityGroup;
    if (network.kind === 'outside-vpc') return undefined;
    const group = new ec2.SecurityGroup(this, `${id}SecurityGroup`, {
      vpc: this.props.vpc,
      description: network.securityGroupDescription,
      allowAllOutbound: false,
    });
    allowEndpointTraffic(group);
    return group;
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
