/** Strongly consistent BatchGetItem over any number of keys: 100 per call, unprocessed keys asked again. */
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';

const BATCH_GET_LIMIT = 100;
const MAX_ROUNDS = 8;

export async function batchGetConsistent(
  doc: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  for (let i = 0; i < keys.length; i += BATCH_GET_LIMIT) {
    let pending: Record<string, unknown>[] | undefined = keys.slice(i, i + BATCH_GET_LIMIT);
    for (let round = 0; pending && pending.length > 0; round++) {
      if (round >= MAX_ROUNDS) throw new Error('BatchGetItem left keys unprocessed after retries');
      if (round > 0) await new Promise((r) => setTimeout(r, Math.min(200, 10 * 2 ** round)));
      const out: BatchGetCommandOutput = await doc.send(
        new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true } } }),
      );
      found.push(...(out.Responses?.[tableName] ?? []));
      pending = out.UnprocessedKeys?.[tableName]?.Keys;
    }
  }
  return found;
}
