import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { QUEUES } from '@pipeline/resources';

/** Messages live for the request retention at most; 4 days is SQS's default and ample for redrives. */
const RETENTION = Duration.days(4);
/** The dead-letter queue keeps messages as long as SQS allows, so an operator can inspect and redrive. */
const DLQ_RETENTION = Duration.days(14);

/** The sign request queue and its dead-letter queue, from QUEUES.signRequests, encrypted with a CMK. */
export class SignQueue extends Construct {
  public readonly queue: sqs.Queue;
  public readonly deadLetterQueue: sqs.Queue;
  public readonly key: kms.Key;

  public constructor(scope: Construct, id: string) {
    super(scope, id);
    const definition = QUEUES.signRequests;
    this.key = new kms.Key(this, 'Key', {
      description: 'Signing pipeline sign request queues',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.deadLetterQueue = new sqs.Queue(this, definition.deadLetter.id, {
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      enforceSSL: true,
      retentionPeriod: DLQ_RETENTION,
    });
    this.queue = new sqs.Queue(this, definition.id, {
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      // Data keys are reused for 5 minutes: fewer KMS calls on the hot path.
      dataKeyReuse: Duration.minutes(5),
      enforceSSL: true,
      retentionPeriod: RETENTION,
      visibilityTimeout: Duration.seconds(definition.visibilityTimeoutSeconds),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: definition.maxReceiveCount },
    });
  }
}
