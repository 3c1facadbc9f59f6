/**
 * Demand history in DynamoDB: one item per key type (pk `DEMAND#<keyType>`) per hour bucket (sort key
 * `bucket`, epoch ms), holding an atomic counter. Recording a request is one UpdateItem with ADD, so it is
 * cheap on the request path and safe under any concurrency; the TTL keeps a bit more than a year, enough
 * for weekly seasonality and last year's deadline weeks. One counter item takes every increment of its
 * hour: DynamoDB allows ~1,000 writes/s per partition, far above the 200 requests/s expected.
 */
import { QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { HOUR_MS, type DemandHistory } from '@pipeline/core/forecast';
import { PipelineError, type KeyType } from '@pipeline/core/shared';

export interface DemandRepositoryOptions {
  readonly tableName: string;
  /** Days an hour bucket is kept; default 400. */
  readonly retentionDays?: number;
  /** Clock (epoch ms); injectable for tests. */
  readonly now?: () => number;
}

/** Invalid arguments to the demand repository (a negative count, a non-positive number of weeks). */
export class DemandRecordError extends PipelineError {
  public override readonly name = 'DemandRecordError';
  public constructor(message: string) {
    super(message, 'DEMAND_RECORD_INVALID');
  }
}

const DEFAULT_RETENTION_DAYS = 400;

export const demandPk = (keyType: KeyType): string => `DEMAND#${keyType}`;

/** Start of the hour bucket holding `epochMs`. */
export const bucketOf = (epochMs: number): number => Math.floor(epochMs / HOUR_MS) * HOUR_MS;

export class DemandRepository {
  private readonly now: () => number;

  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: DemandRepositoryOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Adds `count` requests of `keyType` to the bucket of `at` (default now): one UpdateItem. */
  public async record(keyType: KeyType, at: number = this.now(), count = 1): Promise<void> {
    if (!Number.isInteger(count) || count < 1)
      throw new DemandRecordError('count must be a positive integer');
    const bucket = bucketOf(at);
    const retention = (this.options.retentionDays ?? DEFAULT_RETENTION_DAYS) * 86_400;
    await this.doc.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: { pk: demandPk(keyType), bucket },
        // The TTL is set by the first increment only: later ones do not rewrite it.
        UpdateExpression: 'ADD #count :n SET expiresAt = if_not_exists(expiresAt, :ttl)',
        ExpressionAttributeNames: { '#count': 'count' },
        ExpressionAttributeValues: { ':n': count, ':ttl': Math.floor(bucket / 1000) + retention },
      }),
    );
  }

  /**
   * The complete hour buckets of the last `weeks` weeks before the current bucket, zero where nothing was
   * recorded, in the forecaster's DemandHistory shape. The current (incomplete) hour is left out.
   */
  public async history(keyTypes: readonly KeyType[], weeks: number): Promise<DemandHistory> {
    if (!(weeks > 0)) throw new DemandRecordError('weeks must be positive');
    const end = bucketOf(this.now());
    const buckets = Math.round(weeks * 168);
    const start = end - buckets * HOUR_MS;
    const counts: Partial<Record<KeyType, number[]>> = {};
    for (const keyType of keyTypes) {
      const series = new Array<number>(buckets).fill(0);
      let exclusiveStartKey: Record<string, unknown> | undefined;
      do {
        const page = await this.doc.send(
          new QueryCommand({
            TableName: this.options.tableName,
            KeyConditionExpression: 'pk = :pk AND #bucket BETWEEN :from AND :to',
            ExpressionAttributeNames: { '#bucket': 'bucket', '#count': 'count' },
            ExpressionAttributeValues: { ':pk': demandPk(keyType), ':from': start, ':to': end - HOUR_MS },
            ProjectionExpression: '#bucket, #count',
            ExclusiveStartKey: exclusiveStartKey,
          }),
        );
        for (const item of page.Items ?? []) {
          series[(Number(item.bucket) - start) / HOUR_MS] = Number(item.count);
        }
        exclusiveStartKey = page.LastEvaluatedKey;
      } while (exclusiveStartKey);
      counts[keyType] = series;
    }
    return { start, bucketMs: HOUR_MS, counts };
  }
}
