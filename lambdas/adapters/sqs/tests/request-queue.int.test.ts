/**
 * The sign request queue against ElasticMQ: a received message held (ChangeMessageVisibility) stays
 * invisible for the time asked, well past the queue's visibility timeout, and then comes back.
 */
import { randomBytes } from 'node:crypto';
import { ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { sqsClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { QUEUES } from '@pipeline/resources';
import { ensureQueue } from '../../../../scripts/local/resources';
import { SqsRequestQueue } from '../src';

let client: SQSClient;

beforeAll(() => {
  client = sqsClient(loadAwsConfig(process.env));
});

afterAll(() => client.destroy());

const receive = async (url: string) =>
  (
    await client.send(
      new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 0, MessageSystemAttributeNames: ['All'] }),
    )
  ).Messages ?? [];

test('a held message comes back after the hold, not after the visibility timeout', async () => {
  const { url } = await ensureQueue(client, QUEUES.signRequests, {
    prefix: `hold-${randomBytes(3).toString('hex')}-`,
    visibilityTimeoutSeconds: 1,
  });
  const queue = new SqsRequestQueue(client, url);
  await queue.enqueue('request-1');
  const [first] = await receive(url);
  expect(first.Body).toBe('request-1');
  await queue.hold(first.ReceiptHandle!, 3500);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  // Past the queue's 1 s visibility timeout, still held.
  expect(await receive(url)).toEqual([]);
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const [again] = await receive(url);
  expect(again?.Body).toBe('request-1');
  expect(again?.Attributes?.ApproximateReceiveCount).toBe('2');
});
