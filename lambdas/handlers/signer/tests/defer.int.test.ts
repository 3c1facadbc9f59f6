/**
 * The signer handler meets a request another attempt holds (a live lease): it reports the record as
 * failed and hides the message until the lease ends, so the next delivery can take a dead attempt over
 * instead of spending the message's receives on the way to the dead-letter queue. Real ElasticMQ and
 * DynamoDB Local.
 */
import { randomBytes } from 'node:crypto';
import { ReceiveMessageCommand, SendMessageCommand, type Message } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { documentClient, sqsClient } from '../../../adapters/aws/src';
import { RequestRepository } from '../../../adapters/dynamodb/src';
import { loadAwsConfig } from '../../../config/src';
import { QUEUES, TABLES, ensureQueue } from '../../../resources/src';
import { createTestTables } from '../../../test-support/dynamodb';
import { sampleSignRequestRecord } from '../../../test-support/sign-request';

jest.setTimeout(60_000);

const aws = loadAwsConfig();
const sqs = sqsClient(aws);

afterAll(() => sqs.destroy());

async function receive(queueUrl: string, waitSeconds: number): Promise<Message | undefined> {
  const out = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['ApproximateReceiveCount'],
    }),
  );
  return out.Messages?.[0];
}

test('a request held by a live attempt: the message comes back when the lease ends, not before', async () => {
  const tables = await createTestTables(['requests', 'keyPool', 'audit']);
  const queue = await ensureQueue(sqs, QUEUES.signRequests, {
    prefix: `defer-${randomBytes(3).toString('hex')}-`,
    visibilityTimeoutSeconds: 1,
  });
  Object.assign(process.env, {
    [TABLES.requests.envVar]: tables.requests,
    [TABLES.keyPool.envVar]: tables.keyPool,
    [TABLES.audit.envVar]: tables.audit,
    [QUEUES.signRequests.envVar]: queue.url,
  });
  const requests = new RequestRepository(documentClient(aws), { tableName: tables.requests });
  const record = sampleSignRequestRecord();
  await requests.create(record);
  const leaseMs = 6_000;
  const now = Date.now();
  await requests.startAttempt(record.id, {
    attemptId: 'elsewhere',
    startedAt: now,
    leaseUntil: now + leaseMs,
  });
  await sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: record.id }));

  const message = (await receive(queue.url, 5))!;
  const event: SQSEvent = {
    Records: [
      {
        messageId: message.MessageId!,
        receiptHandle: message.ReceiptHandle!,
        body: message.Body!,
        attributes: { ApproximateReceiveCount: '1' } as never,
        messageAttributes: {},
        md5OfBody: message.MD5OfBody!,
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:local:000000000000:queue',
        awsRegion: aws.region,
      },
    ],
  };
  const { handler } = await import('../index');
  const context = { getRemainingTimeInMillis: () => 60_000 } as Context;
  const result = await handler(event, context);
  expect(result.batchItemFailures).toEqual([{ itemIdentifier: message.MessageId }]);

  // The queue's own visibility timeout is 1 s; the message stays hidden until the lease has ended.
  expect(await receive(queue.url, 3)).toBeUndefined();
  const back = await receive(queue.url, 10);
  expect(back?.Body).toBe(record.id);
  expect(Date.now()).toBeGreaterThanOrEqual(now + leaseMs);
  expect(Number(back?.Attributes?.ApproximateReceiveCount)).toBe(2);
});
