/**
 * Local API keys, API Gateway style: one per e-service client. A default client's key is created at
 * first start and kept in the git-ignored .local/api-keys.json, or taken from LOCAL_API_KEY; further
 * clients come from LOCAL_API_CLIENTS ("name:key,name2:key2").
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LOCAL_DIR } from '../paths';

export interface ApiClient {
  readonly clientId: string;
  readonly apiKey: string;
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
