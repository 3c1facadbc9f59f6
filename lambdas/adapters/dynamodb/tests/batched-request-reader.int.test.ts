/** Many concurrent reads answered by batched, strongly consistent reads: right record for every caller. */
import { randomUUID } from 'node:crypto';
import { documentClient } from '../../aws/src';
import { loadAwsConfig } from '../../../config/src';
import { createTestTables } from '../../../../scripts/local/resources';
import { sampleSignRequestRecord } from '../../../../scripts/local/sample-sign-request';
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

test('gets spread over a tick are answered together, on the tick', async () => {
  const tables = await createTestTables(['requests']);
  const doc = documentClient(loadAwsConfig());
  let batchGets = 0;
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'BatchGetItemCommand') batchGets++;
      return next(args);
    },
    { step: 'initialize', name: 'countBatchGets' },
  );
  const repo = new RequestRepository(doc, { tableName: tables.requests });
  const ids = Array.from({ length: 5 }, () => randomUUID());
  await Promise.all(ids.map((id) => repo.create(sampleSignRequestRecord({ id }))));
  const tickMs = 200;
  const reader = new BatchedRequestReader(doc, { tableName: tables.requests, tickMs });
  // Start just after a tick, then ask every 20 ms: all five asks fall inside one tick.
  await new Promise((r) => setTimeout(r, tickMs - (Date.now() % tickMs) + 5));
  const tickStart = Date.now() - (Date.now() % tickMs);
  const answers: Array<Promise<unknown>> = [];
  for (const id of ids) {
    answers.push(reader.get(id));
    await new Promise((r) => setTimeout(r, 20));
  }
  const records = (await Promise.all(answers)) as Array<{ id: string }>;
  const answeredAt = Date.now();
  expect(records.map((r) => r.id)).toEqual(ids);
  expect(batchGets).toBe(1);
  // Answered on the next tick, not before it.
  expect(answeredAt).toBeGreaterThanOrEqual(tickStart + tickMs);
  doc.destroy();
});
