/** Many concurrent reads answered by batched, strongly consistent reads: right record for every caller. */
import { randomUUID } from 'node:crypto';
import { documentClient } from '../../aws/src';
import { loadAwsConfig } from '../../../config/src';
import { createTestTables } from '../../../test-support/dynamodb';
import { sampleSignRequestRecord } from '../../../test-support/sign-request';
import { BatchedRequestReader, RequestRepository } from '../src';

test('150 concurrent gets (more than one batch), duplicates and a missing id', async () => {
  const tables = await createTestTables(['requests']);
  const doc = documentClient(loadAwsConfig());
  const repo = new RequestRepository(doc, { tableName: tables.requests });
  const ids = Array.from({ length: 150 }, () => randomUUID());
  await Promise.all(
    ids.map((id, i) => repo.create(sampleSignRequestRecord({ id, clientId: `client-${i}`, receivedAt: i }))),
  );
  const reader = new BatchedRequestReader(doc, { tableName: tables.requests });
  const missing = randomUUID();
  const [records, again, none] = await Promise.all([
    Promise.all(ids.map((id) => reader.get(id))),
    reader.get(ids[7]),
    reader.get(missing),
  ]);
  records.forEach((record, i) => expect(record).toMatchObject({ id: ids[i], clientId: `client-${i}` }));
  expect(again?.id).toBe(ids[7]);
  expect(none).toBeUndefined();
  // Strongly consistent: a write is visible to the next batched read.
  await repo.startAttempt(ids[0], { attemptId: 'a', startedAt: 1, leaseUntil: 2 });
  expect((await reader.get(ids[0]))?.status).toBe('signing');
});
