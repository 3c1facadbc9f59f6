/**
 * The HSM's measured keygen rate per key type, kept up to date from the keygen function's own timings
 * (an exponentially weighted average), so the planner works with what this cluster really does. One small
 * item in the demand table (pk `KEYGEN_RATE#<keyType>`, bucket 0).
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { KeyType } from '@pipeline/core/shared';

const WEIGHT_OF_NEW = 0.3;

export class KeygenStatsRepository {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: { readonly tableName: string },
  ) {}

  /** Keys per second per HSM, measured; undefined before the first measurement. */
  public async rate(keyType: KeyType): Promise<number | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.options.tableName, Key: { pk: `KEYGEN_RATE#${keyType}`, bucket: 0 } }),
    );
    const rate = out.Item?.keysPerSecond;
    return typeof rate === 'number' && rate > 0 ? rate : undefined;
  }

  /** Folds one run's measurement (keys generated over the run's duration) into the average. */
  public async observe(keyType: KeyType, keys: number, durationMs: number): Promise<number | undefined> {
    if (keys <= 0 || durationMs <= 0) return this.rate(keyType);
    const measured = keys / (durationMs / 1000);
    const previous = await this.rate(keyType);
    const rate = previous === undefined ? measured : previous + WEIGHT_OF_NEW * (measured - previous);
    await this.doc.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: { pk: `KEYGEN_RATE#${keyType}`, bucket: 0, keysPerSecond: rate, updatedAt: Date.now() },
      }),
    );
    return rate;
  }
}
