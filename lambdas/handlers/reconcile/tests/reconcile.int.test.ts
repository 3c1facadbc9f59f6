/**
 * The reconcile handler against DynamoDB Local and ElasticMQ: an open request whose message is gone gets
 * a fresh message on the real queue; one that requeues did not finish is failed DELIVERY_LOST; requests
 * that are recent, under a live lease or terminal are left alone.
 */
import { randomUUID } from 'node:crypto';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { documentClient, sqsClient } from '@pipeline/adapters/aws';
import { RequestRepository } from '@pipeline/adapters/dynamodb';
import { loadAwsConfig } from '@pipeline/config';
import { QUEUES, TABLES } from '@pipeline/resources';
import { ensureQueue } from '../../../../scripts/local/resources';
import { createTestTables } from '../../../../scripts/local/resources';
import { sampleSignRequestRecord } from '../../../../scripts/local/sample-sign-request';
import { restoreEnvAfterAll } from '../../../test-support/env';

restoreEnvAfterAll();

jest.setTimeout(60_000);

test('lost requests are requeued once per quiet period, then failed; others are left alone', async () => {
  const tables = await createTestTables(['requests']);
  const sqs = sqsClient(loadAwsConfig(process.env));
  const queue = await ensureQueue(sqs, QUEUES.signRequests, { prefix: `reconcile-${randomUUID()}-` });
  Object.assign(process.env, {
    [TABLES.requests.envVar]: tables.requests,
    [QUEUES.signRequests.envVar]: queue.url,
    RECONCILE_STALE_AFTER_SECONDS: '60',
    RECONCILE_MAX_REQUEUES: '1',
  });
  const requests = new RequestRepository(documentClient(loadAwsConfig(process.env)), {
    tableName: tables.requests,
  });
  const now = Date.now();
  const create = async (receivedAt: number): Promise<string> => {
    const record = sampleSignRequestRecord({ receivedAt });
    await requests.create(record);
    return record.id;
  };
  const lost = await create(now - 10 * 60_000);
  const exhausted = await create(now - 10 * 60_000);
  await requests.markRequeued(exhausted, 0, now - 5 * 60_000);
  const recent = await create(now - 10_000);
  const leased = await create(now - 10 * 60_000);
  await requests.startAttempt(leased, { attemptId: 'a', startedAt: now, leaseUntil: now + 60_000 });
  const ended = await create(now - 10 * 60_000);
  await requests.abandon(ended, { code: 'X', message: 'x' }, now);

  const { handler } = await import('../index');
  expect(await handler({})).toEqual({ examined: 3, requeued: 1, abandoned: 1, raced: 0 });

  const received = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
  );
  expect((received.Messages ?? []).map((m) => m.Body)).toEqual([lost]);
  expect(await requests.get(lost)).toMatchObject({ status: 'received', requeues: 1 });
  expect(await requests.get(exhausted)).toMatchObject({ status: 'failed', error: { code: 'DELIVERY_LOST' } });
  expect((await requests.get(recent))?.status).toBe('received');
  expect((await requests.get(leased))?.status).toBe('signing');
  expect((await requests.get(ended))?.error?.code).toBe('X');

  // The requeue restarted the quiet period: an immediate second run does nothing.
  expect(await handler({})).toMatchObject({ requeued: 0, abandoned: 0 });
});
