/**
 * Local API keys, API Gateway style: one per e-service client. A default client's key is created at
 * first start and kept in the git-ignored .local/api-keys.json, or taken from LOCAL_API_KEY; further
 * clients come from LOCAL_API_CLIENTS ("name:key,name2:key2"). At each start every client also gets
 * its own SigV4 credentials and principal (withCredentials), as an e-service has its IAM principal on AWS.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SigV4Credentials } from '../../client/src/sigv4';
import { LOCAL_DIR } from '../paths';

export interface ApiClient {
  readonly clientId: string;
  readonly apiKey: string;
}

/**
 * A client with the credentials it signs with (SigV4, service execute-api) and its principal: what API
 * Gateway reports as the caller's `userArn`. Locally the principal is named by the client id (no IAM
 * account), so records and request-object issuers keep the names they have.
 */
export interface SigningApiClient extends ApiClient, SigV4Credentials {
  readonly principal: string;
}

/** Fresh random credentials for each client (kept in memory; the runner hands them to its callers). */
export function withCredentials(clients: readonly ApiClient[]): SigningApiClient[] {
  return clients.map((client) => ({
    ...client,
    principal: client.clientId,
    accessKeyId: `LOCALAPI${randomBytes(8).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString('base64url'),
  }));
}

/** API_KEY_PRINCIPALS for the API function, as the CDK app sets it: each key's id -> its client's principal. */
export function apiKeyPrincipalsEnv(clients: readonly SigningApiClient[]): Record<string, string> {
  return {
    API_KEY_PRINCIPALS: JSON.stringify(Object.fromEntries(clients.map((c) => [c.clientId, c.principal]))),
  };
}

export const API_KEYS_FILE = join(LOCAL_DIR, 'api-keys.json');
const DEFAULT_CLIENT = 'default-client';

export function loadApiClients(env: NodeJS.ProcessEnv = process.env, file = API_KEYS_FILE): ApiClient[] {
  let stored: ApiClient[] = [];
  if (existsSync(file)) stored = JSON.parse(readFileSync(file, 'utf8')) as ApiClient[];
  let defaultClient = stored.find((c) => c.clientId === DEFAULT_CLIENT);
  const wanted = env.LOCAL_API_KEY;
  if (!defaultClient || (wanted && defaultClient.apiKey !== wanted)) {
    defaultClient = { clientId: DEFAULT_CLIENT, apiKey: wanted || randomBytes(20).toString('base64url') };
    stored = [defaultClient, ...stored.filter((c) => c.clientId !== DEFAULT_CLIENT)];
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
  }
  const extra = (env.LOCAL_API_CLIENTS ?? '')
    .split(',')
    .map((pair) => pair.trim())
    .filter(Boolean)
    .map((pair) => {
      const [clientId, apiKey] = pair.split(':');
      if (!clientId || !apiKey) throw new Error('LOCAL_API_CLIENTS must be "name:key,name2:key2"');
      return { clientId, apiKey };
    });
  return [...stored, ...extra];
}
