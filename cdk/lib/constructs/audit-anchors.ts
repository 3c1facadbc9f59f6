import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';

/**
 * Where audit checkpoints are anchored outside DynamoDB: a bucket with Object Lock in compliance mode.
 * Every object is locked for the retention period from the moment it is written; in compliance mode no
 * one (the root user included) can overwrite or delete a locked version, or shorten its retention, so
 * whoever gets write access to the audit table cannot make the anchors agree with a rewritten log.
 *
 * Object Lock keeps versions, not keys: a plain PutObject on an anchored key would stack a new current
 * version (the one a reader gets) on the locked one. So the bucket policy refuses, to every principal,
 * any write without `If-None-Match: *` (S3 then refuses a key that exists: 412), and every delete (a
 * delete marker would make the key free for a conditional write again).
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
    this.bucket.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'DenyOverwrites',
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ['s3:PutObject'],
        resources: [this.bucket.arnForObjects('*')],
        conditions: { Null: { 's3:if-none-match': 'true' } },
      }),
    );
    this.bucket.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'DenyDeletes',
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ['s3:DeleteObject', 's3:DeleteObjectVersion'],
        resources: [this.bucket.arnForObjects('*')],
      }),
    );
  }
}
