/**
 * Integration tests of the demand history against DynamoDB Local: concurrent atomic increments, hour
 * buckets, the TTL, and reading back weeks in the forecaster's shape.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadConfig } from '@pipeline/config';
import { HOUR_MS, forecast } from '@pipeline/core/forecast';
import { createTestTables } from '../../../../scripts/local/resources';
import { DemandRecordError, DemandRepository, bucketOf, demandPk } from '../src/demand-repository';

const config = loadConfig(process.env);
let doc: DynamoDBDocumentClient;
let tableName: string;
/**
 * A fixed clock: the latest Wednesday 13:20 UTC. Recent, not a fixed past date: the items' TTL follows
 * their hour, and DynamoDB Local deletes expired items in the background (a read-back could race it).
 */
const NOW = ((): number => {
  const today = new Date();
  const back = (today.getUTCDay() - 3 + 7) % 7;
  const wednesday = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - back, 13, 20);
  return wednesday > Date.now() ? wednesday - 7 * 86_400_000 : wednesday;
})();

beforeAll(async () => {
  doc = documentClient(config.aws);
  tableName = (await createTestTables(['demand'])).demand;
});

afterAll(() => doc?.destroy());

describe('DemandRepository', () => {
  it('counts 100 concurrent increments exactly, in the hour bucket, with a TTL', async () => {
    const repo = new DemandRepository(doc, { tableName, now: () => NOW, retentionDays: 10 });
    await Promise.all(Array.from({ length: 100 }, (_, i) => repo.record('RSA-2048', NOW - i * 1000)));
    const item = (
      await doc.send(
        new GetCommand({ TableName: tableName, Key: { pk: demandPk('RSA-2048'), bucket: bucketOf(NOW) } }),
      )
    ).Item!;
    // 13:20 minus up to 99 s stays in the 13:00 bucket.
    expect(item.count).toBe(100);
    expect(item.expiresAt).toBe(bucketOf(NOW) / 1000 + 10 * 86_400);
  });

  it('reads the last weeks as complete hour buckets, zero-filled, without the current hour', async () => {
    const repo = new DemandRepository(doc, { tableName, now: () => NOW });
    const twoHoursAgo = NOW - 2 * HOUR_MS;
    await repo.record('EC-P256', twoHoursAgo, 7);
    await repo.record('EC-P256', twoHoursAgo, 3);
    await repo.record('EC-P256', NOW - 8 * 24 * HOUR_MS, 5); // older than one week: not read
    await repo.record('EC-P256', NOW, 11); // current hour: incomplete, not read
    const history = await repo.history(['EC-P256', 'RSA-4096'], 1);
    expect(history.bucketMs).toBe(HOUR_MS);
    expect(history.start).toBe(bucketOf(NOW) - 168 * HOUR_MS);
    const series = history.counts['EC-P256']!;
    expect(series).toHaveLength(168);
    expect(series[166]).toBe(10);
    expect(series.reduce((a, b) => a + b, 0)).toBe(10);
    expect(history.counts['RSA-4096']).toEqual(new Array(168).fill(0));
    // The shape is the forecaster's input as it is.
    expect(forecast(history).start).toBe(bucketOf(NOW));
  });

  it('rejects a non-positive count', async () => {
    const repo = new DemandRepository(doc, { tableName });
    await expect(repo.record('RSA-2048', NOW, 0)).rejects.toThrow(DemandRecordError);
  });
});
