import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from './errors';
import { loadPoolConfig, loadRequestsConfig } from './pool-config';
import type {
  AppConfig,
  AwsConfig,
  AwsEndpoints,
  Env,
  HsmConfig,
  HsmProfileName,
  ObjectTarget,
  PinSource,
} from './types';

/**
 * The one place configuration is read. Every value comes from an environment variable; the defaults
 * suit the local SoftHSM set-up, and the CDK stack sets the AWS values explicitly.
 */
export function loadConfig(env: Env = process.env): AppConfig {
  return {
    hsm: loadHsmConfig(env),
    aws: loadAwsConfig(env),
    pool: loadPoolConfig(env),
    requests: loadRequestsConfig(env),
  };
}

export function loadHsmConfig(env: Env = process.env): HsmConfig {
  return {
    modulePath: str(env, 'HSM_MODULE_PATH', '/usr/lib/softhsm/libsofthsm2.so'),
    tokenLabel: str(env, 'HSM_TOKEN_LABEL', 'signing-pipeline'),
    pinSource: parsePinSource(str(env, 'HSM_PIN_SOURCE', 'env:HSM_PIN')),
    profile: oneOf<HsmProfileName>(env, 'HSM_PROFILE', ['softhsm', 'cloudhsm'], 'softhsm'),
    sessionPoolSize: int(env, 'HSM_SESSION_POOL_SIZE', 4, 1, 1024),
    wrapKeyLabel: str(env, 'HSM_WRAP_KEY_LABEL', 'pool-wrap-v1'),
  };
}

export function loadAwsConfig(env: Env = process.env): AwsConfig {
  const shared = env.AWS_ENDPOINT_URL || undefined;
  const endpoint = (service: string): string | undefined =>
    env[`AWS_ENDPOINT_URL_${service}`] || shared || undefined;
  const endpoints: AwsEndpoints = {
    dynamodb: endpoint('DYNAMODB'),
    sqs: endpoint('SQS'),
    lambda: endpoint('LAMBDA'),
    secretsmanager: endpoint('SECRETS_MANAGER'),
    ssm: endpoint('SSM'),
    s3: endpoint('S3'),
  };
  return { region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'eu-north-1', endpoints };
}

/** `env:VAR`, `file:/path` or `secretsmanager:<secret id or ARN>`. */
export function parsePinSource(spec: string): PinSource {
  const colon = spec.indexOf(':');
  const kind = colon < 0 ? '' : spec.slice(0, colon);
  const rest = spec.slice(colon + 1);
  if (rest.length > 0) {
    if (kind === 'env') return { kind, variable: rest };
    if (kind === 'file') return { kind, path: rest };
    if (kind === 'secretsmanager') return { kind, secretId: rest };
  }
  throw new ConfigError(
    'HSM_PIN_SOURCE must be env:<VARIABLE>, file:<path> or secretsmanager:<secret id>',
    'HSM_PIN_SOURCE',
  );
}

/** `file:<dir>` (relative to the working directory) or `s3:<bucket>`; `variable` names the setting. */
export function objectTarget(spec: string, variable: string): ObjectTarget {
  const [kind, ...rest] = spec.split(':');
  const value = rest.join(':');
  if (kind === 'file' && value) return { kind, dir: isAbsolute(value) ? value : resolve(value) };
  if (kind === 's3' && /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(value)) return { kind, bucket: value };
  throw new ConfigError(`${variable} must be file:<dir> or s3:<bucket>`, variable);
}

export function str(env: Env, name: string, fallback?: string): string {
  const value = env[name];
  if (value !== undefined && value !== '') return value;
  if (fallback !== undefined) return fallback;
  throw new ConfigError(`${name} is required`, name);
}

export function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}`, name);
  }
  return value;
}

export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new ConfigError(`${name} must be one of ${allowed.join(', ')}`, name);
}
