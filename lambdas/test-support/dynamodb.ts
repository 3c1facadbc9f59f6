/** Test support: the pool's items read straight from its table, as a test's oracle. */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { shardPk } from '@pipeline/adapters/dynamodb';
import type { KeyType } from '@pipeline/core/shared';

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
