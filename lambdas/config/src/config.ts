import { loadPoolConfig, loadRequestsConfig } from './pool-config';
import { int, oneOf, parsePinSource, str } from './readers';
import type { AppConfig, AwsConfig, AwsEndpoints, Env, HsmConfig, HsmProfileName } from './types';
import { ENV } from './env-names';
import { TABLES, tableName, type TableKey } from '@pipeline/resources';

/**
 * The one place configuration is read. Every value comes from the environment record given (a Lambda
 * entry point passes process.env once; the local runner its own record); the defaults suit the local
 * SoftHSM set-up, and the CDK stack sets the AWS values explicitly.
 */
export function loadConfig(env: Env): AppConfig {
  return {
    hsm: loadHsmConfig(env),
    aws: loadAwsConfig(env),
    pool: loadPoolConfig(env),
    requests: loadRequestsConfig(env),
    tables: loadTableNames(env),
  };
}

/** Each table's physical name: its variable (`AUDIT_TABLE_NAME`, ...), else its local name. */
export function loadTableNames(env: Env): Readonly<Record<TableKey, string>> {
  const keys = Object.keys(TABLES) as TableKey[];
  return Object.fromEntries(keys.map((key) => [key, tableName(TABLES[key], env)])) as Record<
    TableKey,
    string
  >;
}

export function loadHsmConfig(env: Env): HsmConfig {
  return {
    modulePath: str(env, ENV.HSM_MODULE_PATH, '/usr/lib/softhsm/libsofthsm2.so'),
    tokenLabel: str(env, ENV.HSM_TOKEN_LABEL, 'signing-pipeline'),
    pinSource: parsePinSource(str(env, ENV.HSM_PIN_SOURCE, 'env:HSM_PIN')),
    profile: oneOf<HsmProfileName>(env, ENV.HSM_PROFILE, ['softhsm', 'cloudhsm'], 'softhsm'),
    sessionPoolSize: int(env, 'HSM_SESSION_POOL_SIZE', 4, 1, 1024),
    wrapKeyLabel: str(env, ENV.HSM_WRAP_KEY_LABEL, 'pool-wrap-v1'),
  };
}

export function loadAwsConfig(env: Env): AwsConfig {
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
