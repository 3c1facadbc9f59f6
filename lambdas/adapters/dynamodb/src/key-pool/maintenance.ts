/**
 * The keygen's upkeep of the pool, never on the request path: removing expired bundles (with their
 * counters) and recounting the counters from the items, the repair for drift (DynamoDB's own TTL
 * deletions never decrement a counter).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { KeyType } from '@pipeline/core/shared';
import { expiryPrefix, shardPk, type BundleItem } from './layout';
import type { ShardCounters } from './shard-counters';

export interface PoolTable {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly shards: number;
  readonly counters: ShardCounters;
}

/** Deletes the type's bundles that expired at or before nowSeconds; tells onRemoved each key's id. */
export async function removeExpired(
  table: PoolTable,
  keyType: KeyType,
  nowSeconds: number,
  onRemoved?: (keyId: string) => void,
): Promise<number> {
  let removed = 0;
  for (let shard = 0; shard < table.shards; shard++) {
    const pk = shardPk(keyType, shard);
    let startKey: Record<string, unknown> | undefined;
    let removedHere = 0;
    do {
      // '0' bounds the range below the counter item ('#' < '0').
      const out = await table.doc.send(
        new QueryCommand({
          TableName: table.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
          ExpressionAttributeValues: { ':pk': pk, ':low': '0', ':high': `${expiryPrefix(nowSeconds)}#~` },
          ProjectionExpression: 'pk, sk',
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of out.Items ?? []) {
        // Conditional, so a bundle claimed (or TTL-deleted) meanwhile is not counted twice.
        const deleted = await deleteIfPresent(table, item.pk as string, item.sk as string);
        for (const key of deleted?.keys ?? []) {
          removedHere++;
          onRemoved?.(key.keyId);
        }
      }
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    if (removedHere > 0) await table.counters.add(pk, -removedHere);
    removed += removedHere;
  }
  return removed;
}

/**
 * Rewrites the counters of a type from the items themselves (a paginated COUNT query per shard). Claims
 * racing with it can leave a counter off by the claims in flight. Returns the unexpired keys counted.
 */
export async function recount(table: PoolTable, keyType: KeyType, nowSeconds: number): Promise<number> {
  let total = 0;
  for (let shard = 0; shard < table.shards; shard++) {
    const pk = shardPk(keyType, shard);
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await table.doc.send(
        new QueryCommand({
          TableName: table.tableName,
          KeyConditionExpression: 'pk = :pk AND sk > :now',
          ExpressionAttributeValues: { ':pk': pk, ':now': `${expiryPrefix(nowSeconds)}#~` },
          ProjectionExpression: 'keyCount',
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of out.Items ?? []) count += Number(item.keyCount ?? 0);
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    await table.counters.set(pk, count);
    total += count;
  }
  return total;
}

/** The deleted bundle, or undefined when it was already gone. */
async function deleteIfPresent(table: PoolTable, pk: string, sk: string): Promise<BundleItem | undefined> {
  try {
    const out = await table.doc.send(
      new DeleteCommand({
        TableName: table.tableName,
        Key: { pk, sk },
        ConditionExpression: 'attribute_exists(pk)',
        ReturnValues: 'ALL_OLD',
      }),
    );
    return out.Attributes as BundleItem | undefined;
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return undefined;
    throw err;
  }
}
