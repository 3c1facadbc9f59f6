import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { readSettings } from './settings';
import { SigningPipelineStack } from './signing-pipeline-stack';

export const STACK_NAME = 'SigningPipelineStack';

/**
 * The app as `cdk synth` builds it, shared with the infra tests so they check exactly what deploys
 * (same feature flags, same cdk-nag checks). `context` overrides cdk.json's context, as `-c` does.
 */
export function createApp(context?: Record<string, unknown>): { app: App; stack: SigningPipelineStack } {
  const app = new App(context ? { context } : undefined);
  const stack = new SigningPipelineStack(app, STACK_NAME, {
    settings: readSettings(app.node),
    description: 'HSM signing pipeline: one-time keys from a CloudHSM-wrapped key pool',
    // Environment-agnostic on purpose: an explicit env would make the VPC look up availability zones in
    // AWS at synth time. The CLI profile picks account and region at deploy.
  });
  // cdk-nag 3 runs as a CDK policy validation plugin: an unacknowledged finding fails the synth.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}
