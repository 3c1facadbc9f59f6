import {
  ChangeMessageVisibilityCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/** SQS's upper bound for a message's visibility timeout (12 hours). */
const MAX_VISIBILITY_SECONDS = 43_200;

/** The sign request queue: a message is just the request id (the request itself lives in DynamoDB). */
export class SqsRequestQueue {
  public constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  public async enqueue(id: string): Promise<void> {
    await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: id }));
  }

  /**
   * Hides a received message for `seconds` from now (bounded to SQS's limits): its next delivery comes
   * when there is a point to it, instead of spending a receive on the way to the dead-letter queue.
   */
  public async deferRedelivery(receiptHandle: string, seconds: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: Math.max(0, Math.min(MAX_VISIBILITY_SECONDS, Math.ceil(seconds))),
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
