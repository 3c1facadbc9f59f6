/**
 * The buffered demand recorder against DynamoDB Local: counts stay in memory until a bound is reached,
 * then go out as one ADD per key type and hour; nothing is lost or counted twice, and a failed write keeps
 * its counts for the next flush. The clock is injected and the timer is off: no test waits on time.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadConfig } from '@pipeline/config';
import { HOUR_MS } from '@pipeline/core/forecast';
import type { KeyType } from '@pipeline/core/shared';
import { createTestTables } from '../../../../scripts/local/resources';
import { BufferedDemandRecorder } from '../src/buffered-demand-recorder';
import { DemandRepository, bucketOf, demandPk } from '../src/demand-repository';

const config = loadConfig(process.env);
let doc: DynamoDBDocumentClient;
let tableName: string;
/**
 * 20 minutes into the current hour. Not a fixed past date: the items' TTL is derived from their hour, and
 * DynamoDB Local deletes expired items in the background, which made a read-back race the sweeper.
 */
const NOW = Math.floor(Date.now() / HOUR_MS) * HOUR_MS + 20 * 60_000;

beforeAll(async () => {
  doc = documentClient(config.aws);
  tableName = (await createTestTables(['demand'])).demand;
});

afterAll(() => doc?.destroy());

async function stored(keyType: KeyType, at: number): Promise<number> {
  const out = await doc.send(
    new GetCommand({
      TableName: tableName,
      Key: { pk: demandPk(keyType), bucket: bucketOf(at) },
      ConsistentRead: true,
    }),
  );
  return Number(out.Item?.count ?? 0);
}

describe('BufferedDemandRecorder', () => {
  it('writes nothing below the bounds, then every count once, per key type and hour bucket', async () => {
    let clock = NOW;
    const repo = new DemandRepository(doc, { tableName });
    const writes: number[] = [];
    const recorder = new BufferedDemandRecorder(
      { record: (k, at, n) => (writes.push(n), repo.record(k, at, n)) },
      { maxDelayMs: 5_000, maxPending: 50, timer: false, now: () => clock },
    );
    for (let i = 0; i < 30; i++) await recorder.record('RSA-2048', NOW);
    for (let i = 0; i < 9; i++) await recorder.record('EC-P256', NOW - HOUR_MS);
    expect(writes).toEqual([]);
    expect(recorder.pendingCount()).toBe(39);
    expect(await stored('RSA-2048', NOW)).toBe(0);

    // The oldest count is now 5 s old: this record flushes, inside the caller's await.
    clock += 5_000;
    await recorder.record('RSA-2048', NOW);
    expect(writes.sort((a, b) => a - b)).toEqual([9, 31]);
    expect(recorder.pendingCount()).toBe(0);
    expect(await stored('RSA-2048', NOW)).toBe(31);
    expect(await stored('EC-P256', NOW - HOUR_MS)).toBe(9);
  });

  it('flushes when maxPending requests are pending', async () => {
    const repo = new DemandRepository(doc, { tableName });
    const at = NOW + 5 * HOUR_MS;
    const recorder = new BufferedDemandRecorder(repo, {
      maxDelayMs: 60_000,
      maxPending: 10,
      timer: false,
      now: () => NOW,
    });
    await Promise.all(Array.from({ length: 25 }, () => recorder.record('EC-P384', at)));
    expect(recorder.pendingCount()).toBe(5);
    expect(await stored('EC-P384', at)).toBe(20);
    await recorder.flush();
    expect(await stored('EC-P384', at)).toBe(25);
  });

  it('writes every request at once with maxDelayMs 0', async () => {
    const repo = new DemandRepository(doc, { tableName });
    const at = NOW + 7 * HOUR_MS;
    const recorder = new BufferedDemandRecorder(repo, {
      maxDelayMs: 0,
      maxPending: 100,
      timer: false,
      now: () => NOW,
    });
    await recorder.record('RSA-3072', at);
    expect(recorder.pendingCount()).toBe(0);
    expect(await stored('RSA-3072', at)).toBe(1);
  });

  it('keeps the counts of a failed write for the next flush', async () => {
    const at = NOW + 9 * HOUR_MS;
    // A table that does not exist: DynamoDB Local refuses the write.
    const missing = new DemandRepository(doc, { tableName: `${tableName}-missing` });
    let sink = missing as { record: DemandRepository['record'] };
    const recorder = new BufferedDemandRecorder(
      { record: (k, a, n) => sink.record(k, a, n) },
      { maxDelayMs: 60_000, maxPending: 3, timer: false, now: () => NOW },
    );
    await recorder.record('RSA-4096', at);
    await recorder.record('RSA-4096', at);
    await expect(recorder.record('RSA-4096', at)).rejects.toThrow();
    expect(recorder.pendingCount()).toBe(3);
    sink = new DemandRepository(doc, { tableName });
    await recorder.flush();
    expect(recorder.pendingCount()).toBe(0);
    expect(await stored('RSA-4096', at)).toBe(3);
  });
});
