/**
 * Strongly consistent BatchGetItem over any number of keys, the one batch read of the repositories: 100
 * keys per call; the keys DynamoDB leaves unprocessed (throttling, the 16 MB response cap) are asked
 * again after a backoff, a bounded number of times.
 */
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { backoffDelay, PipelineError, sleep as realSleep } from '@pipeline/core/shared';

const BATCH_GET_LIMIT = 100;
const MAX_ROUNDS = 8;
const UNPROCESSED_BACKOFF = { baseMs: 20, maxMs: 200 };

/** DynamoDB still left keys unprocessed after every round. */
export class BatchGetIncompleteError extends PipelineError {
  public override readonly name = 'BatchGetIncompleteError';
  public constructor(unprocessed: number) {
    super(
      `BatchGetItem left ${unprocessed} keys unprocessed after ${MAX_ROUNDS} rounds`,
      'BATCH_GET_INCOMPLETE',
    );
  }
}

export interface BatchGetDeps {
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
  /** Only these attributes of each item (a ProjectionExpression without reserved words). */
  readonly projection?: string;
}

export async function batchGetConsistent(
  doc: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
  deps: BatchGetDeps = {},
): Promise<Record<string, unknown>[]> {
  const sleep = deps.sleep ?? realSleep;
  const found: Record<string, unknown>[] = [];
  for (let i = 0; i < keys.length; i += BATCH_GET_LIMIT) {
    let pending: Record<string, unknown>[] | undefined = keys.slice(i, i + BATCH_GET_LIMIT);
    for (let round = 0; pending && pending.length > 0; round++) {
      if (round >= MAX_ROUNDS) throw new BatchGetIncompleteError(pending.length);
      if (round > 0) await sleep(backoffDelay(round, UNPROCESSED_BACKOFF, deps.random));
      const out: BatchGetCommandOutput = await doc.send(
        new BatchGetCommand({
          RequestItems: {
            [tableName]: {
              Keys: pending,
              ConsistentRead: true,
              ...(deps.projection ? { ProjectionExpression: deps.projection } : {}),
            },
          },
        }),
      );
      found.push(...(out.Responses?.[tableName] ?? []));
      pending = out.UnprocessedKeys?.[tableName]?.Keys;
    }
  }
  return found;
}
