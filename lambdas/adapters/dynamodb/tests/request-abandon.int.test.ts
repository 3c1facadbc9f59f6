/** Abandoning a request after its last delivery: only when no live attempt owns it and it is not terminal. */
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { createTestTables } from '../../../../scripts/local/resources';
import { sampleSignRequestRecord } from '../../../../scripts/local/sample-sign-request';
import { RequestRepository } from '../src';

let repo: RequestRepository;
const reason = { code: 'DELIVERY_EXHAUSTED', message: 'not finished after 5 deliveries (Error)' };

beforeAll(async () => {
  const tables = await createTestTables(['requests']);
  repo = new RequestRepository(documentClient(loadAwsConfig(process.env)), { tableName: tables.requests });
});

async function created(): Promise<string> {
  const record = sampleSignRequestRecord();
  await repo.create(record);
  return record.id;
}

test('a received request is failed with the reason', async () => {
  const id = await created();
  const now = Date.now();
  expect(await repo.abandon(id, reason, now)).toMatchObject({
    status: 'failed',
    error: reason,
    finishedAt: now,
  });
});

test('a live attempt keeps its request; an expired one does not', async () => {
  const id = await created();
  const now = Date.now();
  await repo.startAttempt(id, { attemptId: 'a1', startedAt: now, leaseUntil: now + 60_000 });
  expect(await repo.abandon(id, reason, now)).toBeUndefined();
  expect((await repo.get(id))?.status).toBe('signing');
  expect(await repo.abandon(id, reason, now + 61_000)).toMatchObject({ status: 'failed' });
});

test('a terminal request is never changed', async () => {
  const id = await created();
  await repo.abandon(id, reason, Date.now());
  expect(await repo.abandon(id, { code: 'OTHER', message: 'x' }, Date.now())).toBeUndefined();
  expect((await repo.get(id))?.error).toEqual(reason);
});
