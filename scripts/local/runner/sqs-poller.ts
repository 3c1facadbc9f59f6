/**
 * Plays the Lambda SQS event source mapping for the unchanged signer handler: long-polls the queue,
 * hands batches to the handlers (one polling loop each, an execution environment each: one batch in
 * flight per handler), deletes what succeeded and
 * leaves reported failures (batchItemFailures) to come back after the visibility timeout, where the
 * queue's redrive policy moves repeat offenders to the dead-letter queue.
 */
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { lambdaContext } from './gateway';

export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void>;

export interface PollerOptions {
  readonly client: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  /** One polling loop per handler, as one invocation at a time per execution environment. */
  readonly handlers: readonly SqsHandler[];
  readonly batchSize: number;
  /** After the first messages of a batch, keep receiving this long (ms) unless the batch is full. */
  readonly batchingWindowMs?: number;
  readonly region: string;
  readonly functionTimeoutMs: number;
  readonly log?: (line: string) => void;
  /** Waits (the batching window, the pause after a failed receive); default setTimeout. */
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface Poller {
  stop(): Promise<void>;
}

export function startSqsPoller(options: PollerOptions): Poller {
  let running = true;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const loops = options.handlers.map((handler) => loop(handler));

  async function loop(handler: SqsHandler): Promise<void> {
    while (running) {
      let messages: Message[] = [];
      try {
        const out = await options.client.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: options.batchSize,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        messages = out.Messages ?? [];
        // A batching window gathers what arrives meanwhile: wait it out once, then take the rest in one
        // receive (not one receive per message as they trickle in).
        const windowMs = options.batchingWindowMs ?? 0;
        if (messages.length > 0 && messages.length < options.batchSize && windowMs > 0) {
          await sleep(windowMs);
          const more = await options.client.send(
            new ReceiveMessageCommand({
              QueueUrl: options.queueUrl,
              MaxNumberOfMessages: options.batchSize - messages.length,
              WaitTimeSeconds: 0,
              MessageSystemAttributeNames: ['All'],
            }),
          );
          messages.push(...(more.Messages ?? []));
        }
      } catch (err) {
        options.log?.(`poller: receive failed (${(err as Error).name}), retrying`);
        await sleep(1000);
        continue;
      }
      if (messages.length === 0) continue;
      const event: SQSEvent = { Records: messages.map((m) => toRecord(m, options)) };
      let failed = new Set<string>(messages.map((m) => m.MessageId!));
      try {
        const result = await handler(event, lambdaContext('signer', options.functionTimeoutMs));
        failed = new Set((result?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      } catch (err) {
        // A thrown handler fails the whole batch, as with Lambda.
        options.log?.(`poller: signer handler threw (${(err as Error).name}); the batch will be retried`);
      }
      const done = messages.filter((m) => !failed.has(m.MessageId!));
      if (done.length > 0) {
        await options.client
          .send(
            new DeleteMessageBatchCommand({
              QueueUrl: options.queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
            }),
          )
          .catch((err: Error) =>
            options.log?.(`poller: delete failed (${err.name}); messages will be redelivered`),
          );
      }
    }
  }

  return {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

function toRecord(message: Message, options: PollerOptions): SQSRecord {
  const a = message.Attributes ?? {};
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
      SentTimestamp: a.SentTimestamp ?? String(Date.now()),
      SenderId: a.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: options.queueArn,
    awsRegion: options.region,
  } satisfies SQSRecord & { messageId: string };
}
