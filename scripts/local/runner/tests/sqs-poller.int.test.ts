/**
 * The local event source mapping against ElasticMQ: a batching window gathers messages that trickle in
 * into one handler call, with one extra receive for the whole window, and handled messages are deleted.
 */
import { randomBytes } from 'node:crypto';
import { GetQueueAttributesCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { sqsClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { QUEUES } from '@pipeline/resources';
import { ensureQueue } from '../../resources';
import { startSqsPoller } from '../sqs-poller';

let client: SQSClient;
let receives = 0;

beforeAll(() => {
  client = sqsClient(loadAwsConfig(process.env));
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'ReceiveMessageCommand') receives++;
      return next(args);
    },
    { step: 'initialize', name: 'countReceives' },
  );
});

afterAll(() => client.destroy());

test('messages arriving within the batching window reach the handler as one batch', async () => {
  const { url } = await ensureQueue(client, QUEUES.signRequests, {
    prefix: `poller-${randomBytes(3).toString('hex')}-`,
  });
  const arn = (
    await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))
  ).Attributes!.QueueArn!;
  const batches: string[][] = [];
  receives = 0;
  // The poller's batching window is the test's: it opens when the first message is in, and closes when
  // the test has sent the rest.
  let windowOpened!: () => void;
  const opened = new Promise<void>((resolve) => (windowOpened = resolve));
  let closeWindow!: () => void;
  const closed = new Promise<void>((resolve) => (closeWindow = resolve));
  const poller = startSqsPoller({
    client,
    queueUrl: url,
    queueArn: arn,
    handlers: [
      async (event: SQSEvent) => {
        batches.push(event.Records.map((r) => r.body));
      },
    ],
    batchSize: 10,
    batchingWindowMs: 400,
    region: 'us-east-1',
    functionTimeoutMs: 30_000,
    sleep: (ms) => {
      if (ms !== 400) return new Promise((resolve) => setTimeout(resolve, ms));
      windowOpened();
      return closed;
    },
  });
  try {
    await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'm0' }));
    await opened;
    for (let i = 1; i < 5; i++) {
      await client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: `m${i}` }));
    }
    expect(batches).toEqual([]);
    closeWindow();
    const deadline = Date.now() + 10_000;
    while (batches.flat().length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(batches).toEqual([['m0', 'm1', 'm2', 'm3', 'm4']]);
    // The long poll that found m0, and one receive after the window (an idle long poll may follow).
    expect(receives).toBeLessThanOrEqual(3);
    // Handled messages are gone from the queue.
    await new Promise((r) => setTimeout(r, 200));
    const attributes = await client.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    expect(attributes.Attributes).toMatchObject({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
    });
  } finally {
    await poller.stop();
  }
});
