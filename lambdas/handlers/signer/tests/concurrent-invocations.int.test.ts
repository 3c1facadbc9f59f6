/**
 * One environment may run several invocations at once (the local poller does, and so does Lambda's
 * multi-concurrency mode): each invocation must report its own failed records. A batch processor shared
 * across invocations mixes their state, and a failure lost there gets its message deleted, leaving the
 * request it carried without a delivery. Real DynamoDB Local and SoftHSM; the CA endpoint is a closed
 * loopback port, so requests end `failed` `CA_UNAVAILABLE` after retries (slow enough to overlap).
 */
import type { Context, SQSEvent } from 'aws-lambda';
import { sampleSignRequestRecord } from '../../../../scripts/local/sample-sign-request';
import { signerTestEnvironment, sqsRecord } from './support';

jest.setTimeout(90_000);

test('overlapping invocations each report their own failed records', async () => {
  const requests = await signerTestEnvironment();
  const [first, second] = [sampleSignRequestRecord(), sampleSignRequestRecord()];
  await Promise.all([requests.create(first), requests.create(second)]);
  const { handler } = await import('../index');
  const context = { getRemainingTimeInMillis: () => 60_000 } as Context;

  // A: a poison message (fails at once) beside a request still working when B starts.
  const a: SQSEvent = { Records: [sqsRecord('poison', 'not a request id'), sqsRecord('a-1', first.id)] };
  const b: SQSEvent = { Records: [sqsRecord('b-1', second.id)] };
  const resultA = handler(a, context);
  await new Promise((resolve) => setTimeout(resolve, 30));
  const resultB = handler(b, context);

  expect((await resultA).batchItemFailures).toEqual([{ itemIdentifier: 'poison' }]);
  expect((await resultB).batchItemFailures).toEqual([]);
  for (const id of [first.id, second.id]) {
    expect((await requests.get(id))?.status).toMatch(/^(signed|failed)$/);
  }
});
