/**
 * Test support: tables with unique names in the DynamoDB Local the Jest global set-up started, so test
 * files running in parallel never see each other's items.
 */
import { randomBytes } from 'node:crypto';
import { loadAwsConfig } from '../config/src';
import { dynamoDbClient } from '../adapters/aws/src';
import { TABLES, type TableKey } from '../resources/src';
import { ensureTables } from '../../scripts/local/resources';
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { shardPk } from '../adapters/dynamodb/src';
import type { KeyType } from '../core/src';

/** Creates the given tables under fresh names and returns the names by table key. */
export async function createTestTables<K extends TableKey>(keys: readonly K[]): Promise<Record<K, string>> {
  const suffix = randomBytes(4).toString('hex');
  const env: NodeJS.ProcessEnv = {};
  const names = {} as Record<K, string>;
  for (const key of keys) {
    names[key] = `${TABLES[key].localName}-${suffix}`;
    env[TABLES[key].envVar] = names[key];
  }
  const client = dynamoDbClient(loadAwsConfig());
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

/** Every pool bundle item of a key type, read straight from the table (a test's oracle, not the code under test). */
export async function storedPoolBundles(
  doc: DynamoDBDocumentClient,
  table: string,
  keyType: KeyType,
  shards: number,
): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  for (let shard = 0; shard < shards; shard++) {
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await doc.send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: 'pk = :pk AND sk >= :low',
          ExpressionAttributeValues: { ':pk': shardPk(keyType, shard), ':low': '0' },
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...(out.Items ?? []));
      startKey = out.LastEvaluatedKey;
    } while (startKey);
  }
  return items;
}

/** Every stored pool key of a type, each with its bundle's shared attributes. */
export async function storedPoolKeys(
  doc: DynamoDBDocumentClient,
  table: string,
  keyType: KeyType,
  shards: number,
): Promise<Array<Record<string, unknown>>> {
  return (await storedPoolBundles(doc, table, keyType, shards)).flatMap(({ keys, ...bundle }) =>
    (keys as Array<Record<string, unknown>>).map((key) => ({ ...bundle, ...key })),
  );
}
