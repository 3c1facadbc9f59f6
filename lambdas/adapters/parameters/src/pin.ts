import { readFile } from 'node:fs/promises';
import { ConfigError, loadAwsConfig, type AwsConfig, type PinSource } from '@pipeline/config';
import { secretsProvider } from './secret';

/**
 * Resolves the HSM PIN from its source. Errors name the source, never the PIN.
 * A Secrets Manager secret (read through Powertools Parameters, cached for its default max age) may hold
 * the PIN as a plain string, or as JSON `{ "username", "password" }` which becomes CloudHSM's
 * `"<user>:<password>"` form.
 */
export async function resolvePin(source: PinSource, aws?: AwsConfig, env = process.env): Promise<string> {
  switch (source.kind) {
    case 'env': {
      const pin = env[source.variable];
      if (!pin) throw new ConfigError(`the HSM PIN variable ${source.variable} is not set`, source.variable);
      return pin;
    }
    case 'file': {
      const pin = (await readFile(source.path, 'utf8').catch(() => '')).trim();
      if (!pin)
        throw new ConfigError(`the HSM PIN file ${source.path} is missing or empty`, 'HSM_PIN_SOURCE');
      return pin;
    }
    case 'secretsmanager': {
      const secret = await secretsProvider(aws ?? loadAwsConfig(env))
        .get(source.secretId)
        .catch(() => {
          throw new ConfigError(`the HSM PIN secret ${source.secretId} could not be read`, 'HSM_PIN_SOURCE');
        });
      return pinFromSecret(typeof secret === 'string' ? secret : '', source.secretId);
    }
  }
}

function pinFromSecret(secret: string, secretId: string): string {
  const text = secret.trim();
  if (text.startsWith('{')) {
    try {
      const parsed = JSON.parse(text) as { username?: unknown; password?: unknown };
      if (typeof parsed.username === 'string' && typeof parsed.password === 'string') {
        return `${parsed.username}:${parsed.password}`;
      }
    } catch {
      // fall through to the error below: a malformed JSON secret is not a PIN either
    }
    throw new ConfigError(
      `the HSM PIN secret ${secretId} is JSON without username/password`,
      'HSM_PIN_SOURCE',
    );
  }
  if (!text) throw new ConfigError(`the HSM PIN secret ${secretId} is empty`, 'HSM_PIN_SOURCE');
  return text;
}
