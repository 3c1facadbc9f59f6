import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { QueueDefinition } from '@pipeline/resources';

export interface LocalQueueUrls {
  readonly url: string;
  readonly deadLetterUrl: string;
}

/**
 * Creates a queue and its dead-letter queue in a stand-in (ElasticMQ, LocalStack) with the redrive policy
 * from the definition; existing queues are reused. `visibilityTimeoutSeconds` may be shortened locally
 * so that crashed work comes back in seconds rather than minutes.
 */
export async function ensureQueue(
  client: SQSClient,
  queue: QueueDefinition,
  options: { prefix?: string; visibilityTimeoutSeconds?: number } = {},
): Promise<LocalQueueUrls> {
  const prefix = options.prefix ?? '';
  const dlq = await client.send(
    new CreateQueueCommand({ QueueName: `${prefix}${queue.deadLetter.localName}` }),
  );
  const dlqArn = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  const main = await client.send(new CreateQueueCommand({ QueueName: `${prefix}${queue.localName}` }));
  await client.send(
    new SetQueueAttributesCommand({
      QueueUrl: main.QueueUrl,
      Attributes: {
        VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? queue.visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn.Attributes?.QueueArn,
          maxReceiveCount: queue.maxReceiveCount,
        }),
      },
    }),
  );
  return { url: main.QueueUrl!, deadLetterUrl: dlq.QueueUrl! };
}
