/** Many concurrent reads answered by batched, strongly consistent reads: right record for every caller. */
import { randomUUID } from 'node:crypto';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { createTestTables } from '../../../../scripts/local/resources';
import { sampleSignRequestRecord } from '../../../../scripts/local/sample-sign-request';
import { FakeTime } from '../../../test-support/fake-time';
import { BatchedRequestReader, RequestRepository } from '../src';

test('150 concurrent gets (more than one batch), duplicates and a missing id', async () => {
  const tables = await createTestTables(['requests']);
  const doc = documentClient(loadAwsConfig(process.env));
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
  const doc = documentClient(loadAwsConfig(process.env));
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
  // The reader's clock and timer are the test's: the tick boundary is where the test puts it.
  const time = new FakeTime();
  time.now = 5;
  const tickMs = 200;
  const reader = new BatchedRequestReader(doc, {
    tableName: tables.requests,
    tickMs,
    clock: time.clock,
    timer: time.timer,
  });
  // Five asks 20 ms apart, from 5 ms after a tick: all fall inside that tick.
  let answered = 0;
  const answers: Array<Promise<{ id: string } | undefined>> = [];
  for (const id of ids) {
    answers.push(reader.get(id).finally(() => answered++));
    await time.advance(20);
  }
  await time.advance(tickMs - time.now - 1);
  expect([batchGets, answered]).toEqual([0, 0]);
  // The tick: one batch read answers all five.
  await time.advance(1);
  const records = await Promise.all(answers);
  expect(records.map((r) => r?.id)).toEqual(ids);
  expect(batchGets).toBe(1);
  doc.destroy();
});
