/**
 * Deployment settings, read once from CDK context (cdk.json or `-c key=value`). Every value the stack
 * needs from the operator is here, typed and validated; nothing is looked up in AWS at synth time.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Node } from 'constructs';
import {
  apiLimitsProblem,
  AUDIT_CHECKPOINT_INTERVAL,
  ConfigError,
  DEFAULT_IDENTITY_CLIENT_ID,
  DEFAULT_CSC_CALLER_LIMITS,
  DEFAULT_POOL_TARGETS,
  ENV,
  IDENTITY_MODES,
  identityModeMissing,
  keygenTargets,
  POOL_EMPTY_POLICIES,
  POOL_RULES,
  type ApiLimits,
  type CscCallerLimits,
  int as readInt,
  loadDssExtConfig,
  oneOf as readOneOf,
  type IntegerRule,
} from '@pipeline/config';
import type { KeyType } from '@pipeline/core/shared';
import { CSC_BASE_PATH, DSSEXT_BASE_PATH } from '@pipeline/resources';
import { DeploymentSettingsError } from './errors';

/** Scheduled change of the signer's provisioned concurrency (forecast peaks). */
export interface ScalingWindow {
  readonly name: string;
  /** EventBridge cron body, UTC: `0 7 ? * MON-FRI *` */
  readonly cron: string;
  readonly min: number;
  readonly max: number;
}

export interface ExistingVpc {
  readonly vpcId: string;
  readonly cidr: string;
  readonly availabilityZones: string[];
  readonly isolatedSubnetIds: string[];
  /** Route tables of those subnets; needed only when this stack adds the VPC endpoints. */
  readonly isolatedRouteTableIds?: string[];
  /**
   * Whether this stack adds the VPC endpoints. Off by default: a VPC that already hosts the HSMs usually
   * has them, and a second interface endpoint with private DNS for the same service fails to deploy.
   */
  readonly createEndpoints: boolean;
}

export interface HsmSettings {
  readonly clusterId: string;
  readonly securityGroupId: string;
  /** PEM of the cluster's issuing certificate (customerCA.crt), or undefined in placeholder mode. */
  readonly caCertificatePem?: string;
  readonly tokenLabel: string;
  readonly wrapKeyLabel: string;
  readonly signerUser: string;
  readonly caUser: string;
  /** The OCSP responder's crypto user: owns the responder key only. */
  readonly ocspUser: string;
  /** The time-stamping authority's crypto user: owns the TSA key only. */
  readonly tsaUser: string;
  /** The revocation function's crypto user: owns no key, holds a share of the audit key. */
  readonly revokeUser: string;
}

export interface StackSettings {
  /** Synth/test only: placeholder layer and cluster values are accepted (deploy still refuses). */
  readonly allowPlaceholders: boolean;
  readonly layerPath?: string;
  /** The HSMs' VPC; unset only in a placeholder synth (the stack then makes an isolated VPC to synth against). */
  readonly vpc?: ExistingVpc;
  /**
   * The account's Lambda concurrency quota in the region (`aws lambda get-account-settings`,
   * AccountLimit.ConcurrentExecutions): the stack's reserved and provisioned concurrency must leave the
   * 100 unreserved that Lambda keeps, or the deploy fails half-way.
   */
  readonly lambdaConcurrencyQuota: number;
  readonly hsm: HsmSettings;
  readonly signer: { readonly provisionedConcurrency: number; readonly scaling: readonly ScalingWindow[] };
  readonly pool: {
    readonly targets: Partial<Record<KeyType, number>>;
    /** Raw POOL_TARGETS value handed to keygen. */
    readonly targetsSpec: string;
    readonly shards: number;
    readonly bundleSize: number;
    readonly emptyPolicy: 'fallback' | 'reject';
    /** `fallback`: on-the-fly generations of one key type at once per signer environment. */
    readonly fallbackMaxInFlight: number;
    /** ... and how long a request waits for a freed one or a pool key (ms). */
    readonly fallbackWaitMs: number;
    /** Alarm when the pool after a fill is below this share of its target. */
    readonly lowWaterPercent: number;
  };
  /** The stage throttle, each client's throttle and daily quota; one API key per client. */
  readonly api: {
    readonly limits: ApiLimits;
    /** The e-services' names: one API key each. */
    readonly clients: string[];
    /**
     * Per client, the IAM principal (its ARN as API Gateway reports the caller) whose requests may use
     * its API key; a key with none is refused to everyone.
     */
    readonly principals: Readonly<Record<string, string>>;
  };
  readonly caCertsParameterPrefix: string;
  /** http:// base URL relying parties reach the CRLs, CA certificates and OCSP at; default the distribution. */
  readonly pkiBaseUrl?: string;
  /**
   * The CloudFront-scope web ACL (PkiEdgeStack, us-east-1) that limits each source at the PKI distribution;
   * undefined only in a placeholder synth.
   */
  readonly pkiEdgeWebAclArn?: string;
  readonly identity: IdentitySettings;
  /** The CSC API; undefined when `-c cscEnabled=false` (no function, routes or secrets). */
  readonly csc?: CscSettings;
  /** The DSS-Ext door; undefined unless `dssExtEnabled` or `dssExtBaseUrl` (no function, routes or secrets). */
  readonly dssExt?: DssExtSettings;
  readonly audit: {
    /** The checkpointer signs and anchors a checkpoint this often while the audit chains move. */
    readonly checkpointIntervalSeconds: number;
    /** Object Lock (compliance mode) retention of each anchored checkpoint: no one can delete it sooner. */
    readonly anchorRetentionDays: number;
  };
  readonly alarmEmail?: string;
}

/** Who vouches for signers: trusted identity providers (their issuer URLs) and the clients exempted. */
export interface IdentitySettings {
  readonly mode: (typeof IDENTITY_MODES)[number];
  /** `iss` values of the trusted OpenID Providers (HTTPS); their keys are kept in SSM by the refresher. */
  readonly issuers: readonly string[];
  /** This service's client id at those providers: the ID tokens' audience. */
  readonly clientId: string;
  /** Accepted levels of assurance; undefined keeps the function's default (Swedish LoA 3 and 4). */
  readonly acceptedAcr?: readonly string[];
  /**
   * IAM principal ARNs of the clients that may vouch for their signers in request objects, each with its
   * keys in an SSM parameter (the risk is in docs/identity.md).
   */
  readonly trustedClients: readonly string[];
  /** SSM path under which each issuer's JWKS is kept (`<prefix>/jwks/<n>`). */
  readonly parameterPrefix: string;
}

/**
 * The CSC API (docs/csc.md): where its clients reach it, the provider its citizens log in at, and its
 * method throttle. The registered clients (with their secret hashes) and the service's key at the
 * provider are secrets the operator puts after the deploy (docs/operations.md), never context.
 */
export interface CscSettings {
  /** Public base URL, ending in CSC_BASE_PATH (a custom domain mapped to the stage, or the stage URL). */
  readonly baseUrl: string;
  /** The OpenID Provider of the CSC authorizations: one of the identity issuers. */
  readonly idpIssuer: string;
  /** The redirect URI registered for this service at that provider; unset: `<baseUrl>/oauth2/callback`. */
  readonly idpRedirectUri?: string;
  /** Each CSC method's throttle (requests/s and burst), whoever calls: the CSC methods have no API key. */
  readonly rateLimit: number;
  readonly burstLimit: number;
  /** Per source address and per client, requests per minute (the CSC API stage's web ACL). */
  readonly callerLimits: CscCallerLimits;
}

/**
 * The DSS-Ext door (docs/dss-ext.md): its public URL, our SignService, the registered e-services and the
 * federation operator's certificates, as the API, the CA and the door read them (DSSEXT_* variables).
 * The service key and the federation metadata are secrets the operator puts after the deploy
 * (DssExtSecrets), never context.
 */
export interface DssExtSettings {
  /** DSSEXT_BASE_URL: public base URL, ending in DSSEXT_BASE_PATH. */
  readonly baseUrl: string;
  /** DSSEXT_SIGN_SERVICE_ENTITY_ID. */
  readonly signServiceEntityId: string;
  /** DSSEXT_SP_ENTITY_ID; unset: `<baseUrl>/saml/sp`. */
  readonly spEntityId?: string;
  /** DSSEXT_CLIENTS: the registrations, JSON as the functions read it. */
  readonly clients: string;
  /** DSSEXT_METADATA_TRUST: the federation operator's PEM certificates. */
  readonly metadataTrust: string;
  /** DSSEXT_DEFAULT_LOA; unset: the functions' default (LoA 3). */
  readonly defaultLoa?: string;
  /** Each door method's throttle (requests/s and burst): browsers call it, without an API key. */
  readonly rateLimit: number;
  readonly burstLimit: number;
  /** Per source address, requests per minute on every method and on POST /sign (the door's web ACL). */
  readonly sourcePerMinute: number;
  readonly signSourcePerMinute: number;
}

export const PLACEHOLDER_DSSEXT_BASE_URL = `https://dss.placeholder.invalid${DSSEXT_BASE_PATH}`;

export const PLACEHOLDER_CSC_BASE_URL = `https://csc.placeholder.invalid${CSC_BASE_PATH}`;

/** Synth with placeholders and no issuer named: one that resolves nowhere, so nothing is trusted by accident. */
export const PLACEHOLDER_ISSUER = 'https://idp.placeholder.invalid';

export const PLACEHOLDER_CLUSTER_ID = 'cluster-placeholder0';
/** Well-formed (CloudFormation validates the format at synth) but owned by nobody. */
export const PLACEHOLDER_SECURITY_GROUP_ID = 'sg-00000000000000000';

/** Context values arrive as strings from `-c` and as JSON values from cdk.json: accept both. */
type Context = (key: string) => unknown;

export function readSettings(node: Node): StackSettings {
  return parseSettings((key) => node.tryGetContext(key));
}

export function parseSettings(ctx: Context): StackSettings {
  // A built layer means a deploy: placeholders then are refused even when cdk.json allows them (its
  // default for offline synths), so a forgotten `-c allowPlaceholderLayer=false` deploys nothing half-set.
  const allowPlaceholders =
    bool(ctx, 'allowPlaceholderLayer') && optionalString(ctx, 'cloudHsmLayerPath') === undefined;
  const targetsSpec = optionalString(ctx, 'poolTargets') ?? DEFAULT_POOL_TARGETS;
  let targets: Partial<Record<KeyType, number>>;
  try {
    targets = keygenTargets({ [ENV.POOL_TARGETS]: targetsSpec });
  } catch {
    throw new DeploymentSettingsError('poolTargets must look like "RSA-2048=500,EC-P256=200"', 'poolTargets');
  }
  const provisioned = int(ctx, 'signerProvisionedConcurrency', 2, 0, 900);
  const settings: StackSettings = {
    allowPlaceholders,
    layerPath: layerPath(ctx, allowPlaceholders),
    hsm: {
      clusterId: required(
        ctx,
        'hsmClusterId',
        /^cluster-[a-z0-9]+$/,
        allowPlaceholders,
        PLACEHOLDER_CLUSTER_ID,
      ),
      securityGroupId: required(
        ctx,
        'hsmSecurityGroupId',
        /^sg-[a-z0-9]+$/,
        allowPlaceholders,
        PLACEHOLDER_SECURITY_GROUP_ID,
      ),
      caCertificatePem: caCertificate(ctx, allowPlaceholders),
      tokenLabel: optionalString(ctx, 'hsmTokenLabel') ?? 'hsm1',
      wrapKeyLabel: optionalString(ctx, 'wrapKeyLabel') ?? 'pool-wrap-v1',
      signerUser: cryptoUser(ctx, 'signerCryptoUser', 'pool_signer'),
      caUser: cryptoUser(ctx, 'caCryptoUser', 'ca_signer'),
      ocspUser: cryptoUser(ctx, 'ocspCryptoUser', 'ocsp_responder'),
      tsaUser: cryptoUser(ctx, 'tsaCryptoUser', 'tsa_signer'),
      revokeUser: cryptoUser(ctx, 'revokeCryptoUser', 'revoke_auditor'),
    },
    vpc: existingVpc(ctx, allowPlaceholders),
    lambdaConcurrencyQuota: concurrencyQuota(ctx, allowPlaceholders),
    signer: { provisionedConcurrency: provisioned, scaling: scalingWindows(ctx, provisioned) },
    pool: {
      targets,
      targetsSpec,
      // The functions' own defaults and bounds (lambdas/config/src/pool-config.ts).
      shards: integer(ctx, 'poolShards', POOL_RULES.shards),
      bundleSize: integer(ctx, 'poolBundleSize', POOL_RULES.bundleSize),
      emptyPolicy: oneOf(ctx, 'poolEmptyPolicy', POOL_EMPTY_POLICIES, 'fallback'),
      fallbackMaxInFlight: integer(ctx, 'poolFallbackMaxInFlight', POOL_RULES.fallbackMaxInFlight),
      fallbackWaitMs: integer(ctx, 'poolFallbackWaitMs', POOL_RULES.fallbackWaitMs),
      lowWaterPercent: int(ctx, 'poolLowWaterPercent', 20, 1, 100),
    },
    api: { limits: apiLimits(ctx), ...apiClients(ctx, allowPlaceholders) },
    caCertsParameterPrefix: parameterPrefix(
      optionalString(ctx, 'caCertsParameterPrefix') ?? '/signing-pipeline/ca',
      'caCertsParameterPrefix',
    ),
    pkiBaseUrl: pkiBaseUrl(ctx),
    pkiEdgeWebAclArn: pkiEdgeWebAclArn(ctx, allowPlaceholders),
    identity: identitySettings(ctx, allowPlaceholders),
    audit: {
      checkpointIntervalSeconds: integer(ctx, 'auditCheckpointIntervalSeconds', AUDIT_CHECKPOINT_INTERVAL),
      anchorRetentionDays: int(ctx, 'auditAnchorRetentionDays', 3653, 1, 36_500),
    },
    alarmEmail: optionalString(ctx, 'alarmEmail'),
  };
  const dssExt = dssExtEnabled(ctx)
    ? { dssExt: dssExtSettings(ctx, allowPlaceholders, settings.api.limits) }
    : {};
  if (ctx('cscEnabled') === false || ctx('cscEnabled') === 'false') return { ...settings, ...dssExt };
  return {
    ...settings,
    csc: cscSettings(ctx, allowPlaceholders, settings.identity, settings.api.limits),
    ...dssExt,
  };
}

/**
 * The stage throttle (API Gateway applies it to each method) and, per client, a throttle below it and a
 * daily quota: one e-service at its limit leaves room for the others. The bounds are API Gateway's
 * default account limits (10,000 requests/s, burst 5,000).
 */
function apiLimits(ctx: Context): ApiLimits {
  for (const [old, replacement] of [
    ['apiRateLimit', 'apiStageRateLimit and apiClientRateLimit'],
    ['apiBurstLimit', 'apiStageBurstLimit and apiClientBurstLimit'],
  ]) {
    // A renamed key silently ignored would deploy other limits than the operator meant.
    if (ctx(old) !== undefined) {
      throw new DeploymentSettingsError(`${old} is no longer read: set ${replacement}`, old);
    }
  }
  const limits: ApiLimits = {
    stage: {
      rateLimit: int(ctx, 'apiStageRateLimit', 200, 1, 10_000),
      burstLimit: int(ctx, 'apiStageBurstLimit', 400, 1, 5_000),
    },
    client: {
      rateLimit: int(ctx, 'apiClientRateLimit', 50, 1, 10_000),
      burstLimit: int(ctx, 'apiClientBurstLimit', 100, 1, 5_000),
      quotaPerDay: int(ctx, 'apiClientQuotaPerDay', 1_000_000, 0, 1_000_000_000),
    },
  };
  const problem = apiLimitsProblem(limits);
  if (problem) {
    const key = problem.limit === 'rate' ? 'apiClientRateLimit' : 'apiClientBurstLimit';
    throw new DeploymentSettingsError(`${key}: ${problem.message}`, key);
  }
  return limits;
}

function optionalString(ctx: Context, key: string): string | undefined {
  const value = ctx(key);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new DeploymentSettingsError(`${key} must be a string`, key);
  return value;
}

/** The value of `key` checked against `pattern`, or undefined when it is not set. */
function matching(ctx: Context, key: string, pattern: RegExp): string | undefined {
  const value = optionalString(ctx, key);
  if (value !== undefined && !pattern.test(value)) {
    throw new DeploymentSettingsError(`${key} must match ${pattern}`, key);
  }
  return value;
}

/** A deploy cannot do without `key`; a placeholder synth can. */
function missing(key: string): DeploymentSettingsError {
  return new DeploymentSettingsError(
    `${key} is required (or -c allowPlaceholderLayer=true for a synth that can never be deployed)`,
    key,
  );
}

/** `key`, checked; unset: `placeholder` in a placeholder synth, refused for a deploy. */
function required(
  ctx: Context,
  key: string,
  pattern: RegExp,
  allowPlaceholders: boolean,
  placeholder: string,
): string {
  const value = matching(ctx, key, pattern);
  if (value !== undefined) return value;
  if (allowPlaceholders) return placeholder;
  throw missing(key);
}

function layerPath(ctx: Context, allowPlaceholders: boolean): string | undefined {
  const path = optionalString(ctx, 'cloudHsmLayerPath');
  if (path === undefined && !allowPlaceholders) {
    throw new DeploymentSettingsError(
      'cloudHsmLayerPath is required: build the layer with layers/cloudhsm/build.sh ' +
        '(or -c allowPlaceholderLayer=true for a synth that can never be deployed)',
      'cloudHsmLayerPath',
    );
  }
  return path;
}

function bool(ctx: Context, key: string): boolean {
  const value = ctx(key);
  return value === true || value === 'true';
}

/**
 * A context value read by the functions' own readers (lambdas/config): one rule and one message for a
 * setting whether the CDK app or the function checks it; their ConfigError becomes this app's error.
 */
function asSetting<T>(ctx: Context, key: string, read: (env: Record<string, string | undefined>) => T): T {
  const raw = ctx(key);
  const env = { [key]: raw === undefined || raw === null ? undefined : String(raw) };
  try {
    return read(env);
  } catch (err) {
    if (err instanceof ConfigError) throw new DeploymentSettingsError(err.message, key);
    throw err;
  }
}

function int(ctx: Context, key: string, fallback: number, min: number, max: number): number {
  return asSetting(ctx, key, (env) => readInt(env, key, fallback, min, max));
}

/** `int` by the rule the function that reads the setting applies (lambdas/config). */
function integer(ctx: Context, key: string, rule: IntegerRule): number {
  return int(ctx, key, rule.fallback, rule.min, rule.max);
}

function oneOf<T extends string>(ctx: Context, key: string, allowed: readonly T[], fallback: T): T {
  optionalString(ctx, key); // a number or a list is not one of the names
  return asSetting(ctx, key, (env) => readOneOf(env, key, allowed, fallback));
}

/** `apiClients`: `name` or `name=<IAM principal ARN>` each (the principal that may use the name's key). */
function apiClients(
  ctx: Context,
  allowPlaceholders: boolean,
): { clients: string[]; principals: Record<string, string> } {
  const entries = list(ctx, 'apiClients') ?? ['default'];
  const principals: Record<string, string> = {};
  const clients = entries.map((entry) => {
    const at = entry.indexOf('=');
    const name = at < 0 ? entry : entry.slice(0, at).trim();
    if (!/^[\w.-]+$/.test(name)) {
      throw new DeploymentSettingsError(
        'apiClients: a client name is letters, digits, dots, dashes and underscores',
        'apiClients',
      );
    }
    if (at >= 0) {
      const principal = entry.slice(at + 1).trim();
      if (!/^arn:aws[\w-]*:(iam|sts)::\d{12}:\S+$/.test(principal)) {
        throw new DeploymentSettingsError(`apiClients: ${name}'s principal is not an IAM ARN`, 'apiClients');
      }
      principals[name] = principal;
    } else if (!allowPlaceholders) {
      // A key bound to no one serves no one: a deploy says whose each key is.
      throw new DeploymentSettingsError(
        `apiClients: ${name} needs its IAM principal (name=<principal ARN>) for a deploy`,
        'apiClients',
      );
    }
    return name;
  });
  return { clients, principals };
}

/** A JSON array (cdk.json) or a comma-separated string (`-c key=a,b`). */
function list(ctx: Context, key: string): string[] | undefined {
  const value = ctx(key);
  if (value === undefined || value === null || value === '') return undefined;
  const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : undefined;
  if (!items || !items.every((i) => typeof i === 'string' && i.trim() !== '')) {
    throw new DeploymentSettingsError(`${key} must be a list of strings`, key);
  }
  return items.map((i: string) => i.trim());
}

function existingVpc(ctx: Context, allowPlaceholders: boolean): ExistingVpc | undefined {
  const vpcId = matching(ctx, 'vpcId', /^vpc-[0-9a-f]+$/);
  if (!vpcId) {
    // The cluster must exist before the stack (its id, security group and CA certificate are context),
    // so its VPC does too: a VPC made by the stack could hold no HSM at deploy time.
    if (allowPlaceholders) return undefined;
    throw new DeploymentSettingsError(
      'vpcId is required: the VPC of the CloudHSM cluster (with vpcCidr, vpcAvailabilityZones, vpcIsolatedSubnetIds and vpcIsolatedRouteTableIds)',
      'vpcId',
    );
  }
  // Vpc.fromLookup would call AWS at synth time; these attributes keep synth offline.
  const cidr = optionalString(ctx, 'vpcCidr');
  const availabilityZones = list(ctx, 'vpcAvailabilityZones');
  const isolatedSubnetIds = list(ctx, 'vpcIsolatedSubnetIds');
  if (!cidr || !availabilityZones || !isolatedSubnetIds) {
    throw new DeploymentSettingsError(
      'vpcId needs vpcCidr, vpcAvailabilityZones and vpcIsolatedSubnetIds (the subnets of the HSMs)',
      'vpcId',
    );
  }
  if (isolatedSubnetIds.length % availabilityZones.length !== 0) {
    throw new DeploymentSettingsError(
      'vpcIsolatedSubnetIds must hold the same number of subnets per availability zone',
      'vpcIsolatedSubnetIds',
    );
  }
  // On unless the operator says the VPC already has every endpoint the functions use (operations.md):
  // without them no function in these subnets reaches any AWS service.
  const createEndpoints = !(ctx('vpcCreateEndpoints') === false || ctx('vpcCreateEndpoints') === 'false');
  const isolatedRouteTableIds = list(ctx, 'vpcIsolatedRouteTableIds');
  if (createEndpoints && isolatedRouteTableIds?.length !== isolatedSubnetIds.length) {
    throw new DeploymentSettingsError(
      'vpcIsolatedRouteTableIds is required, one per isolated subnet (for the DynamoDB and S3 gateway endpoints), ' +
        'unless -c vpcCreateEndpoints=false because the VPC already has every endpoint (docs/operations.md)',
      'vpcIsolatedRouteTableIds',
    );
  }
  return { vpcId, cidr, availabilityZones, isolatedSubnetIds, isolatedRouteTableIds, createEndpoints };
}

/** Lambda's default quota stands in for a placeholder synth; a deploy says the account's own. */
function concurrencyQuota(ctx: Context, allowPlaceholders: boolean): number {
  const key = 'lambdaConcurrencyQuota';
  const value = ctx(key);
  if ((value === undefined || value === null || value === '') && !allowPlaceholders) {
    throw new DeploymentSettingsError(
      `${key} is required: the account's Lambda concurrency quota in this region ` +
        '(aws lambda get-account-settings --query AccountLimit.ConcurrentExecutions)',
      key,
    );
  }
  return int(ctx, key, 1000, 10, 1_000_000);
}

/**
 * CloudHSM user names: letters, digits and underscores, at most 31 characters (CloudHSM CLI `user
 * create`); a name outside that could never be created, and every login of its functions would fail.
 */
export const CRYPTO_USER_NAME = /^[A-Za-z0-9_]{1,31}$/;

function cryptoUser(ctx: Context, key: string, fallback: string): string {
  const value = optionalString(ctx, key) ?? fallback;
  if (!CRYPTO_USER_NAME.test(value)) {
    throw new DeploymentSettingsError(
      `${key} must be a CloudHSM user name: letters, digits and underscores, at most 31 characters`,
      key,
    );
  }
  return value;
}

/** `hsmCaCertPath`: the cluster's customerCA.crt, relative to the working directory. */
function caCertificate(ctx: Context, allowPlaceholders: boolean): string | undefined {
  const path = optionalString(ctx, 'hsmCaCertPath');
  if (!path) {
    if (allowPlaceholders) return undefined;
    throw new DeploymentSettingsError(
      'hsmCaCertPath is required: the PEM file of the cluster certificate issuer (customerCA.crt)',
      'hsmCaCertPath',
    );
  }
  let pem: string;
  try {
    pem = readFileSync(resolve(path), 'utf8');
  } catch {
    throw new DeploymentSettingsError(`hsmCaCertPath ${path} cannot be read`, 'hsmCaCertPath');
  }
  if (
    !/^-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----\s*$/.test(
      pem.trim() + '\n',
    )
  ) {
    throw new DeploymentSettingsError(`hsmCaCertPath ${path} is not one PEM certificate`, 'hsmCaCertPath');
  }
  return pem.trim() + '\n';
}

function scalingWindows(ctx: Context, base: number): ScalingWindow[] {
  const raw = ctx('signerScheduledScaling');
  if (raw === undefined || raw === null || raw === '') return [];
  let parsed: unknown;
  try {
    parsed = typeof raw === 'string' ? JSON.parse(raw) : raw;
  } catch {
    parsed = undefined;
  }
  const fail = (): never => {
    throw new DeploymentSettingsError(
      'signerScheduledScaling must be a JSON array of {"name","cron","min","max"} (min <= max <= 900)',
      'signerScheduledScaling',
    );
  };
  if (!Array.isArray(parsed)) return fail();
  const windows = parsed.map((w: unknown) => {
    const { name, cron, min, max } = (w ?? {}) as Record<string, unknown>;
    const ok =
      typeof name === 'string' &&
      /^[A-Za-z0-9-]+$/.test(name) &&
      typeof cron === 'string' &&
      cron.trim().split(/\s+/).length === 6 &&
      Number.isInteger(min) &&
      Number.isInteger(max) &&
      (min as number) >= 0 &&
      (min as number) <= (max as number) &&
      (max as number) <= 900;
    return ok ? ({ name, cron, min, max } as ScalingWindow) : fail();
  });
  if (windows.length > 0 && base < 1) {
    throw new DeploymentSettingsError(
      'signerScheduledScaling needs signerProvisionedConcurrency >= 1 (the scalable target)',
      'signerScheduledScaling',
    );
  }
  return windows;
}

function parameterPrefix(value: string, key: string): string {
  if (!/^\/[A-Za-z0-9_.\-/]+[^/]$/.test(value)) {
    throw new DeploymentSettingsError(`${key} must look like /signing-pipeline/ca`, key);
  }
  return value;
}

/** A custom domain for the PKI distribution (CNAME), plain http as the certificates name it. */
function pkiBaseUrl(ctx: Context): string | undefined {
  const value = optionalString(ctx, 'pkiBaseUrl');
  if (value !== undefined && !/^http:\/\/[A-Za-z0-9.-]+(:\d+)?$/.test(value)) {
    throw new DeploymentSettingsError(
      'pkiBaseUrl must be http://<host> (the distribution root)',
      'pkiBaseUrl',
    );
  }
  return value;
}

/** Unset only in a placeholder synth (the distribution then has no web ACL). */
function pkiEdgeWebAclArn(ctx: Context, allowPlaceholders: boolean): string | undefined {
  const key = 'pkiEdgeWebAclArn';
  const value = matching(
    ctx,
    key,
    /^arn:aws[a-z-]*:wafv2:us-east-1:\d{12}:global\/webacl\/[A-Za-z0-9_-]+\/[0-9a-f-]{36}$/,
  );
  if (value === undefined && !allowPlaceholders) throw missing(key);
  return value;
}

function identitySettings(ctx: Context, allowPlaceholders: boolean): IdentitySettings {
  const mode = oneOf(ctx, 'identityMode', IDENTITY_MODES, 'assertion');
  const issuers = list(ctx, 'identityIssuers') ?? [];
  if (issuers.some((issuer) => !/^https:\/\/[^\s/]+(\/\S*)?$/.test(issuer))) {
    throw new DeploymentSettingsError('identityIssuers must be HTTPS issuer URLs', 'identityIssuers');
  }
  const trustedClients = list(ctx, 'identityTrustedClients') ?? [];
  // The functions' own rule (lambdas/config): what each mode cannot do without.
  const lacking = identityModeMissing(mode, { issuers: issuers.length, clients: trustedClients.length });
  if (lacking === 'issuers') {
    if (!allowPlaceholders) {
      throw new DeploymentSettingsError(
        'identityIssuers is required: the issuer URLs of the trusted OpenID Providers ' +
          '(or -c identityMode=trusted-client, see docs/identity.md for the risk)',
        'identityIssuers',
      );
    }
    issuers.push(PLACEHOLDER_ISSUER);
  }
  if (lacking === 'clients') {
    throw new DeploymentSettingsError(
      'identityTrustedClients is required with identityMode=trusted-client: the IAM principal ARNs of the clients that vouch for their signers',
      'identityTrustedClients',
    );
  }
  return {
    mode,
    issuers,
    clientId: optionalString(ctx, 'identityClientId') ?? DEFAULT_IDENTITY_CLIENT_ID,
    acceptedAcr: list(ctx, 'identityAcceptedAcr'),
    trustedClients,
    parameterPrefix: parameterPrefix(
      optionalString(ctx, 'identityParameterPrefix') ?? '/signing-pipeline/identity',
      'identityParameterPrefix',
    ),
  };
}

/**
 * The CSC API's settings. Its base URL is required for a deploy (the function cannot know the public
 * name its clients use; the stage URL would make the function depend on its own API); its provider is
 * one the API trusts, so that the ID tokens it obtains pass the API's checks.
 */
function cscSettings(
  ctx: Context,
  allowPlaceholders: boolean,
  identity: IdentitySettings,
  limits: ApiLimits,
): CscSettings {
  const baseUrl = required(
    ctx,
    'cscBaseUrl',
    new RegExp(`^https://[A-Za-z0-9.-]+(:\\d+)?(/[A-Za-z0-9._~-]+)*${CSC_BASE_PATH.replace(/\//g, '\\/')}$`),
    allowPlaceholders,
    PLACEHOLDER_CSC_BASE_URL,
  );
  const idpIssuer = optionalString(ctx, 'cscIdpIssuer') ?? identity.issuers[0];
  if (idpIssuer === undefined || !identity.issuers.includes(idpIssuer)) {
    throw new DeploymentSettingsError(
      'cscIdpIssuer must be one of identityIssuers (the CSC API obtains ID tokens the API must accept; ' +
        'unset, it is the first of them): name the provider in identityIssuers, or -c cscEnabled=false',
      'cscIdpIssuer',
    );
  }
  const idpRedirectUri = matching(ctx, 'cscIdpRedirectUri', /^https:\/\/[A-Za-z0-9.-]+(:\d+)?\/\S*$/);
  const rateLimit = int(ctx, 'cscRateLimit', 20, 1, limits.stage.rateLimit);
  const burstLimit = int(ctx, 'cscBurstLimit', 40, 1, limits.stage.burstLimit);
  // WAF's rate-based rules: at least 10 requests per evaluation window.
  const perMinute = (key: string, fallback: number) => int(ctx, key, fallback, 10, 2_000_000_000);
  const callerLimits: CscCallerLimits = {
    sourcePerMinute: perMinute('cscSourceRequestsPerMinute', DEFAULT_CSC_CALLER_LIMITS.sourcePerMinute),
    authorizeSourcePerMinute: perMinute(
      'cscAuthorizeSourceRequestsPerMinute',
      DEFAULT_CSC_CALLER_LIMITS.authorizeSourcePerMinute,
    ),
    clientPerMinute: perMinute('cscClientRequestsPerMinute', DEFAULT_CSC_CALLER_LIMITS.clientPerMinute),
  };
  return {
    baseUrl,
    idpIssuer,
    ...(idpRedirectUri ? { idpRedirectUri } : {}),
    rateLimit,
    burstLimit,
    callerLimits,
  };
}

/**
 * The DSS-Ext door is deployed when `dssExtEnabled` says so, else when `dssExtBaseUrl` is set: unlike the
 * CSC API it is off by default, because its settings reach the API and the CA (they verify DSS-Ext
 * evidence), whose configuration would refuse placeholder registrations and certificates.
 */
function dssExtEnabled(ctx: Context): boolean {
  const value = ctx('dssExtEnabled');
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  if (value !== undefined && value !== null && value !== '') {
    throw new DeploymentSettingsError('dssExtEnabled must be true or false', 'dssExtEnabled');
  }
  return optionalString(ctx, 'dssExtBaseUrl') !== undefined;
}

/** The context key of each DSSEXT_* variable the door's settings become. */
const DSSEXT_CONTEXT_KEYS: Readonly<Record<string, string>> = {
  DSSEXT_BASE_URL: 'dssExtBaseUrl',
  DSSEXT_SIGN_SERVICE_ENTITY_ID: 'dssExtSignServiceEntityId',
  DSSEXT_SP_ENTITY_ID: 'dssExtSpEntityId',
  DSSEXT_CLIENTS: 'dssExtClients',
  DSSEXT_METADATA_TRUST: 'dssExtMetadataTrust',
  DSSEXT_DEFAULT_LOA: 'dssExtDefaultLoa',
};

/**
 * The door's settings. Base URL, SignService entityID, registrations and the operator's certificates are
 * required for a deploy (a placeholder synth puts placeholders the functions would refuse), and checked
 * by the functions' own reader (loadDssExtConfig), so a deploy never ships settings the API, the CA or
 * the door refuse at their first request.
 */
function dssExtSettings(ctx: Context, allowPlaceholders: boolean, limits: ApiLimits): DssExtSettings {
  const placeholders: Record<string, string> = {
    dssExtBaseUrl: PLACEHOLDER_DSSEXT_BASE_URL,
    dssExtSignServiceEntityId: 'https://dss.placeholder.invalid/sign-service',
    dssExtClients: '[]',
    dssExtMetadataTrust: 'placeholder: no federation operator certificate',
  };
  let placeholder = false;
  const value = (key: string): string => {
    const raw = ctx(key);
    // cdk.json may hold the registrations as JSON rather than a JSON string.
    const text =
      key === 'dssExtClients' && Array.isArray(raw) ? JSON.stringify(raw) : optionalString(ctx, key);
    if (text !== undefined) return text;
    if (!allowPlaceholders) throw missing(key);
    placeholder = true;
    return placeholders[key]!;
  };
  const baseUrl = value('dssExtBaseUrl');
  if (
    !new RegExp(
      `^https://[A-Za-z0-9.-]+(:\\d+)?(/[A-Za-z0-9._~-]+)*${DSSEXT_BASE_PATH.replace(/\//g, '\\/')}$`,
    ).test(baseUrl)
  ) {
    throw new DeploymentSettingsError(
      `dssExtBaseUrl must be https://<host>[/<path>]${DSSEXT_BASE_PATH}`,
      'dssExtBaseUrl',
    );
  }
  const settings = {
    baseUrl,
    signServiceEntityId: value('dssExtSignServiceEntityId'),
    spEntityId: optionalString(ctx, 'dssExtSpEntityId'),
    clients: value('dssExtClients'),
    metadataTrust: value('dssExtMetadataTrust'),
    defaultLoa: optionalString(ctx, 'dssExtDefaultLoa'),
  };
  if (!placeholder) checkDssExt(settings);
  const perMinute = (key: string, fallback: number) => int(ctx, key, fallback, 10, 2_000_000_000);
  return {
    ...settings,
    rateLimit: int(ctx, 'dssExtRateLimit', 20, 1, limits.stage.rateLimit),
    burstLimit: int(ctx, 'dssExtBurstLimit', 40, 1, limits.stage.burstLimit),
    sourcePerMinute: perMinute('dssExtSourceRequestsPerMinute', 600),
    signSourcePerMinute: perMinute('dssExtSignSourceRequestsPerMinute', 60),
  };
}

/** The settings through the functions' reader; its ConfigError names the variable, this its context key. */
function checkDssExt(
  settings: Omit<DssExtSettings, 'rateLimit' | 'burstLimit' | 'sourcePerMinute' | 'signSourcePerMinute'>,
): void {
  try {
    loadDssExtConfig({
      [ENV.DSSEXT_BASE_URL]: settings.baseUrl,
      [ENV.DSSEXT_SIGN_SERVICE_ENTITY_ID]: settings.signServiceEntityId,
      [ENV.DSSEXT_SP_ENTITY_ID]: settings.spEntityId,
      [ENV.DSSEXT_CLIENTS]: settings.clients,
      [ENV.DSSEXT_METADATA_TRUST]: settings.metadataTrust,
      [ENV.DSSEXT_DEFAULT_LOA]: settings.defaultLoa,
      // The secret's ARN is the stack's (DssExtSecrets): any secret reference passes the reader.
      [ENV.DSSEXT_FEDERATION_METADATA]: 'secretsmanager:federation-metadata',
    });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const key = DSSEXT_CONTEXT_KEYS[err.variable] ?? 'dssExtClients';
    throw new DeploymentSettingsError(err.message, key);
  }
}
