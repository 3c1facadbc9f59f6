import { App, CfnOutput, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { PkiEdgeLimits } from './constructs/pki-edge-limits';

export const PKI_EDGE_STACK_NAME = 'SigningPipelinePkiEdgeStack';

/**
 * The PKI distribution's CloudFront-scope web ACL, in us-east-1 (where AWS keeps every CloudFront-scope
 * web ACL). Deployed once, before the pipeline stack, whose `pkiEdgeWebAclArn` context names its output.
 */
export class PkiEdgeStack extends Stack {
  public readonly limits: PkiEdgeLimits;

  public constructor(scope: Construct, id: string, props: StackProps = {}) {
    super(scope, id, { ...props, env: { ...props.env, region: 'us-east-1' } });
    this.limits = new PkiEdgeLimits(this, 'PkiEdgeLimits');
    new CfnOutput(this, 'PkiEdgeWebAclArn', {
      value: this.limits.webAcl.attrArn,
      description: 'Pass to the pipeline stack as -c pkiEdgeWebAclArn=<this value>',
    });
  }
}

/** The edge app as `cdk deploy --app "tsx cdk/bin/pki-edge.ts"` builds it, shared with the infra tests. */
export function createPkiEdgeApp(): { app: App; stack: PkiEdgeStack } {
  const app = new App();
  const stack = new PkiEdgeStack(app, PKI_EDGE_STACK_NAME, {
    description: 'HSM signing pipeline: per-source limit of the public PKI distribution (CloudFront scope)',
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}
