/**
 * Tables with unique names in the DynamoDB Local the Jest global set-up started, so test files running
 * in parallel never see each other's items.
 */
import { randomBytes } from 'node:crypto';
import { dynamoDbClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { TABLES, type TableKey } from '@pipeline/resources';
import { ensureTables } from './tables';

/** Creates the given tables under fresh names and returns the names by table key. */
export async function createTestTables<K extends TableKey>(keys: readonly K[]): Promise<Record<K, string>> {
  const suffix = randomBytes(4).toString('hex');
  const env: NodeJS.ProcessEnv = {};
  const names = {} as Record<K, string>;
  for (const key of keys) {
    names[key] = `${TABLES[key].localName}-${suffix}`;
    env[TABLES[key].envVar] = names[key];
  }
  const client = dynamoDbClient(loadAwsConfig(process.env));
  try {
    await ensureTables(
      client,
      keys.map((k) => TABLES[k]),
      env,
    );
  } finally {
    client.destroy();
  }
  return names;
}
