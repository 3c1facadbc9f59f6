/**
 * The last delivery of a message meets a request another attempt holds (a live lease, e.g. a signer
 * that died): instead of leaving the request `signing` once the message is dead-lettered, the handler
 * waits for the lease and takes the request over, which ends it. Real DynamoDB Local and SoftHSM; the CA
 * endpoint is a closed loopback port, so the takeover ends `failed` `CA_UNAVAILABLE`: terminal either way.
 */
import type { Context, SQSEvent } from 'aws-lambda';
import { documentClient } from '../../../adapters/aws/src';
import { RequestRepository } from '../../../adapters/dynamodb/src';
import { loadAwsConfig } from '../../../config/src';
import { QUEUES, TABLES } from '../../../resources/src';
import { createTestTables } from '../../../test-support/dynamodb';
import { sampleSignRequestRecord } from '../../../test-support/sign-request';

jest.setTimeout(90_000);

test('the last delivery waits out a live lease and takes the request over to a terminal state', async () => {
  const tables = await createTestTables(['requests', 'keyPool', 'audit']);
  Object.assign(process.env, {
    [TABLES.requests.envVar]: tables.requests,
    [TABLES.keyPool.envVar]: tables.keyPool,
    [TABLES.audit.envVar]: tables.audit,
    AWS_ENDPOINT_URL_LAMBDA: 'http://127.0.0.1:9',
    POOL_EMPTY_POLICY: 'fallback',
  });
  const requests = new RequestRepository(documentClient(loadAwsConfig()), { tableName: tables.requests });
  const record = sampleSignRequestRecord();
  await requests.create(record);
  const now = Date.now();
  await requests.startAttempt(record.id, { attemptId: 'died', startedAt: now, leaseUntil: now + 3_000 });

  const event: SQSEvent = {
    Records: [
      {
        messageId: 'm-1',
        receiptHandle: 'r-1',
        body: record.id,
        attributes: { ApproximateReceiveCount: String(QUEUES.signRequests.maxReceiveCount) } as never,
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:local:000000000000:queue',
        awsRegion: 'eu-north-1',
      },
    ],
  };
  const { handler } = await import('../index');
  const result = await handler(event, { getRemainingTimeInMillis: () => 60_000 } as Context);
  expect(Date.now()).toBeGreaterThanOrEqual(now + 3_000);
  expect(result.batchItemFailures).toEqual([]);
  const after = await requests.get(record.id);
  expect(after?.status).toMatch(/^(signed|failed)$/);
  expect(after?.attempts).toBe(2);
  expect(after?.attemptId).not.toBe('died');
});
