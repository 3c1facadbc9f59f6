import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  type AttributeDefinition,
} from '@aws-sdk/client-dynamodb';
import { tableName, type KeyAttribute, type TableDefinition } from '@pipeline/resources';

/**
 * Creates tables from their definitions in a stand-in (DynamoDB Local, LocalStack); existing tables are
 * left alone. On AWS the CDK app creates them instead.
 */
export async function ensureTables(
  client: DynamoDBClient,
  tables: readonly TableDefinition[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  await Promise.all(tables.map((table) => ensureTable(client, table, env)));
}

async function ensureTable(
  client: DynamoDBClient,
  table: TableDefinition,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const name = tableName(table, env);
  const attributes = new Map<string, KeyAttribute>();
  const add = (a?: KeyAttribute): void => {
    if (a) attributes.set(a.name, a);
  };
  add(table.partitionKey);
  add(table.sortKey);
  for (const index of table.globalSecondaryIndexes ?? []) {
    add(index.partitionKey);
    add(index.sortKey);
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [...attributes.values()].map((a): AttributeDefinition => ({
          AttributeName: a.name,
          AttributeType: a.type,
        })),
        KeySchema: [
          { AttributeName: table.partitionKey.name, KeyType: 'HASH' },
          ...(table.sortKey ? [{ AttributeName: table.sortKey.name, KeyType: 'RANGE' as const }] : []),
        ],
        GlobalSecondaryIndexes: table.globalSecondaryIndexes?.map((index) => ({
          IndexName: index.indexName,
          KeySchema: [
            { AttributeName: index.partitionKey.name, KeyType: 'HASH' as const },
            ...(index.sortKey ? [{ AttributeName: index.sortKey.name, KeyType: 'RANGE' as const }] : []),
          ],
          Projection: { ProjectionType: index.projection ?? 'ALL' },
        })),
      }),
    );
    if (table.ttlAttribute) {
      await client.send(
        new UpdateTimeToLiveCommand({
          TableName: name,
          TimeToLiveSpecification: { AttributeName: table.ttlAttribute, Enabled: true },
        }),
      );
    }
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
  }
  await client.send(new DescribeTableCommand({ TableName: name }));
}
