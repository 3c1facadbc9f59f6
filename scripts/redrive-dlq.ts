/**
 * `npm run redrive -- [--dry-run] [--max N]`: moves messages from the sign request dead-letter queue back
 * to the queue (after the cause was fixed). The consumer is idempotent, so a request that meanwhile
 * reached a terminal state is simply acknowledged again; nothing is signed twice.
 * Uses SIGN_QUEUE_URL / SIGN_DLQ_URL and the SQS endpoint from the environment (AWS or a stand-in), or
 * those of a running `npm start`.
 */
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { sqsClient } from '@pipeline/adapters/aws';
import { loadAwsConfig, str } from '@pipeline/config';
import { useRunnerEnv } from './local/runner-info';

export interface RedriveResult {
  readonly moved: number;
  readonly seen: number;
}

export async function redrive(
  client: SQSClient,
  from: string,
  to: string,
  options: { max?: number; dryRun?: boolean } = {},
): Promise<RedriveResult> {
  const max = options.max ?? Number.POSITIVE_INFINITY;
  let moved = 0;
  let seen = 0;
  while (seen < max) {
    const out = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: from,
        MaxNumberOfMessages: Math.min(10, max - seen),
        WaitTimeSeconds: 1,
        // A dry run only peeks: the messages come back at once.
        VisibilityTimeout: options.dryRun ? 0 : 30,
      }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) break;
    seen += messages.length;
    if (options.dryRun) {
      for (const m of messages) console.log(`would redrive ${m.MessageId}: ${m.Body}`);
      break;
    }
    const sent = await client.send(
      new SendMessageBatchCommand({
        QueueUrl: to,
        Entries: messages.map((m, i) => ({ Id: String(i), MessageBody: m.Body ?? '' })),
      }),
    );
    // Delete only what was re-sent: a message is never lost between the two queues.
    const ok = new Set((sent.Successful ?? []).map((s) => s.Id));
    const done = messages.filter((_, i) => ok.has(String(i)));
    if (done.length > 0) {
      await client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: from,
          Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
    }
    moved += done.length;
  }
  return { moved, seen };
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const maxIndex = args.indexOf('--max');
  const options = {
    dryRun: args.includes('--dry-run'),
    max: maxIndex >= 0 ? Number(args[maxIndex + 1]) : undefined,
  };
  useRunnerEnv(); // locally: the queues of a running `npm start`
  const client = sqsClient(loadAwsConfig(process.env));
  redrive(client, str(process.env, 'SIGN_DLQ_URL'), str(process.env, 'SIGN_QUEUE_URL'), options).then(
    (result) => console.log(JSON.stringify(result)),
    (err: Error) => {
      console.error(`redrive failed: ${err.name}: ${err.message}`);
      process.exit(1);
    },
  );
}
