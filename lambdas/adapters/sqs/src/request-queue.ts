import {
  ChangeMessageVisibilityCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { RequestQueue } from '@pipeline/core/signing';

/** SQS's longest visibility timeout (seconds). */
const MAX_VISIBILITY_SECONDS = 43_200;

/** The sign request queue: a message is just the request id (the request itself lives in DynamoDB). */
export class SqsRequestQueue implements RequestQueue {
  public constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  public async enqueue(id: string): Promise<void> {
    await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: id }));
  }

  /**
   * Keeps a received message invisible for `ms` from now (whole seconds, rounded up), instead of the
   * queue's visibility timeout: a delivery that cannot act yet comes back when it can.
   */
  public async hold(receiptHandle: string, ms: number): Promise<void> {
    const seconds = Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.ceil(ms / 1000)));
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  }

  /** Approximate depth: waiting messages and messages being processed. */
  public async depth(): Promise<{ visible: number; inFlight: number }> {
    const out = await this.client.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return {
      visible: Number(out.Attributes?.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  }
}
