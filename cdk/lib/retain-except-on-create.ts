import { CfnDeletionPolicy, CfnResource, type IAspect } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * Every retained resource becomes RetainExceptOnCreate: kept on update and delete as before, but removed
 * when the stack's first create rolls back. Plain Retain would leave the fixed-name CA parameters, keys,
 * secrets, tables, buckets and log groups behind, and the retry would fail on "already exists".
 */
export class RetainExceptOnCreate implements IAspect {
  public visit(node: IConstruct): void {
    if (node instanceof CfnResource && node.cfnOptions.deletionPolicy === CfnDeletionPolicy.RETAIN) {
      node.cfnOptions.deletionPolicy = CfnDeletionPolicy.RETAIN_EXCEPT_ON_CREATE;
    }
  }
}
