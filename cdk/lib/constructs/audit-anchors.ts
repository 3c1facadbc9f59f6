import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';

/**
 * Where audit checkpoints are anchored outside DynamoDB: a bucket with Object Lock in compliance mode.
 * Every object is locked for the retention period from the moment it is written; in compliance mode no
 * one (the root user included) can overwrite or delete a locked version, or shorten its retention, so
 * whoever gets write access to the audit table cannot make the anchors agree with a rewritten log.
 */
export class AuditAnchors extends Construct {
  public readonly bucket: s3.Bucket;

  public constructor(
    scope: Construct,
    id: string,
    props: { readonly retentionDays: number; readonly accessLogs: s3.IBucket },
  ) {
    super(scope, id);
    this.bucket = new s3.Bucket(this, 'Bucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // Object Lock needs versioning (CDK turns it on); the default retention locks every new version.
      versioned: true,
      objectLockEnabled: true,
      objectLockDefaultRetention: s3.ObjectLockRetention.compliance(Duration.days(props.retentionDays)),
      serverAccessLogsBucket: props.accessLogs,
      serverAccessLogsPrefix: 'audit-anchors/',
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}
