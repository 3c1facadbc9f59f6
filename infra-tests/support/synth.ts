/**
 * Builds the app the way `cdk synth` does (cdk.json's feature flags, cdk-nag plugin), with the placeholder
 * layer allowed. One synth per test file: bundling four functions with esbuild takes a while.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { createApp } from '../../cdk/lib/app';
import type { SigningPipelineStack } from '../../cdk/lib/signing-pipeline-stack';

export const CDK_JSON_CONTEXT = (
  JSON.parse(readFileSync(resolve(__dirname, '../../cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  }
).context;

export interface Synthesized {
  readonly stack: SigningPipelineStack;
  readonly template: Template;
}

export function synthesize(
  context: Record<string, unknown> = {},
  options: { bundle?: boolean } = {},
): Synthesized {
  const { stack } = createApp({
    ...CDK_JSON_CONTEXT,
    allowPlaceholderLayer: true,
    // As the CLI does: construct paths in resource metadata, so tests can find resources by path.
    'aws:cdk:enable-path-metadata': true,
    // An empty list skips asset bundling (CDK's own switch); used where the code assets do not matter.
    ...(options.bundle === false ? { 'aws:cdk:bundling-stacks': [] } : {}),
    ...context,
  });
  return { stack, template: Template.fromStack(stack) };
}

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown>; [k: string]: unknown }>;

export function resources(template: Template, type: string): Resources {
  return template.findResources(type) as Resources;
}

/** Logical id of the single resource of `type` whose construct path contains `pathPart`. */
export function logicalId(template: Template, type: string, pathPart: string): string {
  const matches = Object.entries(resources(template, type)).filter(([, r]) =>
    String((r.Metadata as { 'aws:cdk:path'?: string } | undefined)?.['aws:cdk:path'] ?? '').includes(
      pathPart,
    ),
  );
  if (matches.length !== 1) throw new Error(`${matches.length} ${type} resources match ${pathPart}`);
  return matches[0][0];
}

/** All IAM policy statements attached to a role (by the role's logical id). */
export function roleStatements(template: Template, roleId: string): Record<string, unknown>[] {
  return Object.values(resources(template, 'AWS::IAM::Policy'))
    .filter((p) => JSON.stringify(p.Properties?.Roles ?? []).includes(`"${roleId}"`))
    .flatMap((p) => (p.Properties!.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement);
}

export function actionsOf(statement: Record<string, unknown>): string[] {
  const action = statement.Action;
  return Array.isArray(action) ? (action as string[]) : [action as string];
}
