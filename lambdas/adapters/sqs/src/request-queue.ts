import { GetQueueAttributesCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** The sign request queue: a message is just the request id (the request itself lives in DynamoDB). */
export class SqsRequestQueue {
  public constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  public async enqueue(id: string): Promise<void> {
    await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: id }));
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
