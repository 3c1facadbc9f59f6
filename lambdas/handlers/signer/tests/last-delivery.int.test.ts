/**
 * The last delivery of a message meets a request another attempt holds (a live lease, e.g. a signer
 * that died): instead of leaving the request `signing` once the message is dead-lettered, the handler
 * waits for the lease and takes the request over, which ends it. Real DynamoDB Local and SoftHSM; the CA
 * endpoint is a closed loopback port, so the takeover ends `failed` `CA_UNAVAILABLE`: terminal either way.
 */
import type { Context, SQSEvent } from 'aws-lambda';
import { QUEUES } from '@pipeline/resources';
import { sampleSignRequestRecord } from '../../../../scripts/local/sample-sign-request';
import { signerTestEnvironment, sqsRecord } from './support';

jest.setTimeout(90_000);

test('the last delivery waits out a live lease and takes the request over to a terminal state', async () => {
  const requests = await signerTestEnvironment();
  const record = sampleSignRequestRecord();
  await requests.create(record);
  const now = Date.now();
  await requests.startAttempt(record.id, { attemptId: 'died', startedAt: now, leaseUntil: now + 3_000 });

  const event: SQSEvent = {
    Records: [sqsRecord('m-1', record.id, QUEUES.signRequests.maxReceiveCount)],
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
