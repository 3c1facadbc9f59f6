import { readFile } from 'node:fs/promises';
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import { ConfigError, loadAwsConfig, type AwsConfig, type SecretSource } from '@pipeline/config';
import { secretsManagerClient } from '@pipeline/adapters/aws';

/** One provider per endpoint and process, so Powertools' cache spans reconnects of the HSM. */
const providers = new Map<string, SecretsProvider>();

export function secretsProvider(aws: AwsConfig): SecretsProvider {
  const key = `${aws.region} ${aws.endpoints.secretsmanager ?? ''}`;
  let provider = providers.get(key);
  if (!provider) {
    provider = new SecretsProvider({ awsSdkV3Client: secretsManagerClient(aws) });
    providers.set(key, provider);
  }
  return provider;
}

/**
 * The text of a secret the configuration names (`variable`), from its file or its Secrets Manager
 * secret (a string secret). Errors name the variable and the source, never what it holds.
 */
export async function readSecretText(
  source: SecretSource,
  variable: string,
  aws?: AwsConfig,
  env = process.env,
): Promise<string> {
  const text =
    source.kind === 'file'
      ? await readFile(source.path, 'utf8').catch(() => '')
      : await secretsProvider(aws ?? loadAwsConfig(env))
          .get(source.secretId)
          .then((value) => (typeof value === 'string' ? value : ''))
          .catch(() => '');
  const where = source.kind === 'file' ? `file ${source.path}` : `secret ${source.secretId}`;
  if (!text.trim())
    throw new ConfigError(`${variable}: the ${where} is missing, unreadable or empty`, variable);
  return text.trim();
}
