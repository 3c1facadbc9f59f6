/**
 * Evaluates a role's policies in a synthesized template with an IAM policy evaluator
 * (@cloud-copilot/iam-simulate), the template's references resolved to ARNs of a test account and
 * region: whether a function's role allows a call, as AWS would decide it, not as a string match.
 */
import { runSimulation, type Simulation } from '@cloud-copilot/iam-simulate';
import type { Template } from 'aws-cdk-lib/assertions';

export const TEST_ACCOUNT = '123456789012';
export const TEST_REGION = 'eu-north-1';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

/** The physical name a resource gets in the test account: its logical id, lowercased for S3. */
function physicalName(id: string, type: string): string {
  return type === 'AWS::S3::Bucket' ? id.toLowerCase() : id;
}

function arnOf(id: string, type: string): string {
  const name = physicalName(id, type);
  const at = `${TEST_REGION}:${TEST_ACCOUNT}`;
  const arns: Record<string, string> = {
    'AWS::S3::Bucket': `arn:aws:s3:::${name}`,
    'AWS::DynamoDB::Table': `arn:aws:dynamodb:${at}:table/${name}`,
    'AWS::Lambda::Function': `arn:aws:lambda:${at}:function:${name}`,
    'AWS::SQS::Queue': `arn:aws:sqs:${at}:${name}`,
    'AWS::KMS::Key': `arn:aws:kms:${at}:key/${name}`,
    'AWS::SecretsManager::Secret': `arn:aws:secretsmanager:${at}:secret:${name}`,
    'AWS::IAM::Role': `arn:aws:iam::${TEST_ACCOUNT}:role/${name}`,
  };
  const arn = arns[type];
  if (!arn) throw new Error(`no ARN for ${type} ${id}`);
  return arn;
}

const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': TEST_REGION,
  'AWS::AccountId': TEST_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
};

/** A template value with Ref, Fn::GetAtt (Arn), Fn::Join and Fn::Sub resolved. */
export function resolveValue(value: unknown, resources: Resources): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveValue(v, resources));
  if (value === null || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  if ('Ref' in object) {
    const ref = object.Ref as string;
    if (PSEUDO[ref]) return PSEUDO[ref];
    const resource = resources[ref];
    if (!resource) throw new Error(`Ref to unknown ${ref}`);
    return resource.Type === 'AWS::SQS::Queue' || resource.Type === 'AWS::SecretsManager::Secret'
      ? arnOf(ref, resource.Type)
      : physicalName(ref, resource.Type);
  }
  if ('Fn::GetAtt' in object) {
    const [id, attribute] = object['Fn::GetAtt'] as [string, string];
    if (attribute !== 'Arn') throw new Error(`Fn::GetAtt ${id}.${attribute} not resolved`);
    return arnOf(id, resources[id].Type);
  }
  if ('Fn::Join' in object) {
    const [separator, parts] = object['Fn::Join'] as [string, unknown[]];
    return (resolveValue(parts, resources) as string[]).join(separator);
  }
  if ('Fn::Sub' in object) {
    const text = object['Fn::Sub'] as string;
    return text.replace(/\$\{([^}]+)\}/g, (_, name: string) =>
      String(resolveValue({ Ref: name }, resources)),
    );
  }
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, resolveValue(v, resources)]));
}

/** The inline policies attached to a role (AWS::IAM::Policy), resolved. */
function identityPolicies(template: Template, roleId: string): Simulation['identityPolicies'] {
  const resources = template.toJSON().Resources as Resources;
  return Object.entries(resources)
    .filter(
      ([, r]) =>
        r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles ?? []).includes(`"${roleId}"`),
    )
    .map(([id, r]) => ({
      name: id,
      policy: resolveValue(r.Properties!.PolicyDocument, resources) as object,
    }));
}

/** The bucket policy of a bucket (AWS::S3::BucketPolicy), resolved, if it has one. */
function bucketPolicy(template: Template, bucketId: string): object | undefined {
  const resources = template.toJSON().Resources as Resources;
  const policy = Object.values(resources).find(
    (r) =>
      r.Type === 'AWS::S3::BucketPolicy' &&
      JSON.stringify(r.Properties?.Bucket) === JSON.stringify({ Ref: bucketId }),
  );
  return policy && (resolveValue(policy.Properties!.PolicyDocument, resources) as object);
}

export interface SimulatedCall {
  readonly action: string;
  readonly resource: string;
  /** The bucket whose policy applies too (S3 calls). */
  readonly bucketId?: string;
  readonly context?: Record<string, string | string[]>;
}

/** 'Allowed', 'ImplicitlyDenied' or 'ExplicitlyDenied' for the role's call. */
export async function simulate(template: Template, roleId: string, call: SimulatedCall): Promise<string> {
  const resourcePolicy = call.bucketId ? bucketPolicy(template, call.bucketId) : undefined;
  const simulation: Simulation = {
    identityPolicies: identityPolicies(template, roleId),
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    ...(resourcePolicy ? { resourcePolicy } : {}),
    request: {
      action: call.action,
      principal: arnOf(roleId, 'AWS::IAM::Role'),
      resource: { accountId: TEST_ACCOUNT, resource: call.resource },
      contextVariables: { 'aws:SecureTransport': 'true', ...call.context },
    },
  } as Simulation;
  const response = await runSimulation(simulation, {});
  if (response.resultType === 'error') throw new Error(JSON.stringify(response.errors));
  return response.overallResult;
}
