import { loadPoolConfig, loadRequestsConfig } from './pool-config';
import { int, oneOf, parsePinSource, str } from './readers';
import type { AppConfig, AwsConfig, AwsEndpoints, Env, HsmConfig, HsmProfileName } from './types';
import { ENV } from './env-names';

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
    modulePath: str(env, ENV.HSM_MODULE_PATH, '/usr/lib/softhsm/libsofthsm2.so'),
    tokenLabel: str(env, ENV.HSM_TOKEN_LABEL, 'signing-pipeline'),
    pinSource: parsePinSource(str(env, ENV.HSM_PIN_SOURCE, 'env:HSM_PIN')),
    profile: oneOf<HsmProfileName>(env, ENV.HSM_PROFILE, ['softhsm', 'cloudhsm'], 'softhsm'),
    sessionPoolSize: int(env, 'HSM_SESSION_POOL_SIZE', 4, 1, 1024),
    wrapKeyLabel: str(env, ENV.HSM_WRAP_KEY_LABEL, 'pool-wrap-v1'),
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
