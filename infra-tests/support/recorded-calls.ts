/**
 * Checks recorded AWS calls (AWS_CALL_RECORD_FILE) against a synthesized template: the function's role
 * allows each call, evaluated by iam-simulate with local names mapped to the template's resources, and
 * a function in a VPC reaches each service it calls through an endpoint of its VPC (or a NAT route).
 */
import type { Template } from 'aws-cdk-lib/assertions';
import type { RecordedCall } from '@pipeline/adapters/aws';
import { QUEUES, TABLES } from '@pipeline/resources';
import { FUNCTION_SPECS } from '../../cdk/lib/constructs/functions';
import { TEST_ACCOUNT, TEST_REGION, resolveValue, simulate } from './iam-simulate';
import { logicalId } from './synth';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

/** The distinct calls of a recording (JSON lines); the runner's own calls (`unknown`) left out. */
export function distinctCalls(lines: string): RecordedCall[] {
  const calls = new Map<string, RecordedCall>();
  for (const line of lines.split('\n').filter(Boolean)) {
    const call = JSON.parse(line) as RecordedCall;
    if (call.function === 'unknown') continue;
    calls.set(JSON.stringify(call), call);
  }
  return [...calls.values()];
}

/** The template's construct id of a function (`audit-checkpoint` -> `AuditCheckpoint`). */
const constructId = (name: string): string =>
  name.replace(/(^|-)([a-z])/g, (_, _dash: string, c: string) => c.toUpperCase());

/** The function spec a local function name stands for (the longest spec name it ends with). */
function specName(local: string): string {
  const name = local.split(':').pop()!;
  const matches = FUNCTION_SPECS.map((s) => s.name)
    .filter((s) => name === s || name.endsWith(`-${s}`))
    .sort((a, b) => b.length - a.length);
  if (!matches.length) throw new Error(`no function spec for ${local}`);
  return matches[0];
}

/** One call as IAM sees it: the action and the ARN in the test account, plus the service it reaches. */
export interface IamCall {
  readonly function: string;
  readonly service: string;
  readonly action: string;
  readonly resource: string;
  readonly bucketId?: string;
  readonly context?: Record<string, string | string[]>;
}

/** The local resource names (physical, in `env`) mapped to template ARNs. */
export class ResourceMap {
  public constructor(
    private readonly template: Template,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  public tableArn(local: string): string {
    const table = Object.values(TABLES).find((t) => this.env[t.envVar] === local);
    if (!table) throw new Error(`no table ${local} in the environment`);
    const id = logicalId(this.template, 'AWS::DynamoDB::Table', `/${table.id}/`);
    return `arn:aws:dynamodb:${TEST_REGION}:${TEST_ACCOUNT}:table/${id}`;
  }

  public queueArn(url: string): string {
    const queue = [QUEUES.signRequests, QUEUES.signRequests.deadLetter].find(
      (q) => this.env[q.envVar] === url,
    );
    if (!queue) throw new Error(`no queue ${url} in the environment`);
    const id = logicalId(this.template, 'AWS::SQS::Queue', `/${queue.id}/`);
    return `arn:aws:sqs:${TEST_REGION}:${TEST_ACCOUNT}:${id}`;
  }

  public functionArn(local: string): string {
    const id = logicalId(
      this.template,
      'AWS::Lambda::Function',
      `Functions/${constructId(specName(local))}/Resource`,
    );
    return `arn:aws:lambda:${TEST_REGION}:${TEST_ACCOUNT}:function:${id}`;
  }

  /**
   * The calls IAM evaluates for a recorded call: DynamoDB's per item (a transaction's by each item's
   * action, a batch as the batch action), an S3 read of a missing object with ListBucket too.
   */
  public iamCalls(call: RecordedCall): IamCall[] {
    const of = (action: string, resource: string, extra: Partial<IamCall> = {}): IamCall => ({
      function: call.function,
      service: call.service,
      action,
      resource,
      ...extra,
    });
    switch (call.service) {
      case 'dynamodb':
        return (call.items ?? []).map((item) =>
          of(
            `dynamodb:${item.action}`,
            `${this.tableArn(item.table)}${item.index ? `/index/${item.index}` : ''}`,
            {
              ...(item.key ? { context: { 'dynamodb:LeadingKeys': [item.key] } } : {}),
            },
          ),
        );
      case 'sqs':
        return call.resources.map((url) => of(`sqs:${call.action}`, this.queueArn(url)));
      case 'lambda':
        return call.resources.map((name) =>
          of(`lambda:${call.action === 'Invoke' ? 'InvokeFunction' : call.action}`, this.functionArn(name)),
        );
      case 's3':
        return call.resources.flatMap((object) => {
          const [bucket, ...key] = object.split('/');
          const bucketArn = `arn:aws:s3:::${bucket.toLowerCase()}`;
          const action = call.action === 'HeadObject' ? 'GetObject' : call.action;
          return [
            of(`s3:${action}`, key.length ? `${bucketArn}/${key.join('/')}` : bucketArn, {
              bucketId: bucket,
            }),
            ...(call.missingObject ? [of('s3:ListBucket', bucketArn, { bucketId: bucket })] : []),
          ];
        });
      default:
        throw new Error(`calls to ${call.service} are not mapped to the template`);
    }
  }
}

/** Whether the role of `call.function` allows it; a problem line if not. */
export async function roleProblem(template: Template, call: IamCall): Promise<string | undefined> {
  const role = logicalId(
    template,
    'AWS::IAM::Role',
    `Functions/${constructId(specName(call.function))}Role/Resource`,
  );
  const result = await simulate(template, role, call);
  return result === 'Allowed'
    ? undefined
    : `${call.function}: ${call.action} on ${call.resource}${call.context ? ` ${JSON.stringify(call.context)}` : ''} is ${result}`;
}

/** The service an endpoint serves (`com.amazonaws.<region>.<service>` -> `<service>`). */
function endpointService(serviceName: unknown, resources: Resources): string {
  return String(resolveValue(serviceName, resources)).split('.').pop()!;
}

/**
 * Whether `function` (a spec name) reaches `service`: not in a VPC, or an interface endpoint in its
 * subnets, a gateway endpoint on route tables, or a NAT route in the template.
 */
export function reachProblem(template: Template, fn: string, service: string): string | undefined {
  const resources = template.toJSON().Resources as Resources;
  const id = logicalId(template, 'AWS::Lambda::Function', `Functions/${constructId(specName(fn))}/Resource`);
  const vpcConfig = resources[id].Properties?.VpcConfig as { SubnetIds?: unknown } | undefined;
  if (!vpcConfig) return undefined;
  const subnets = JSON.stringify(resolveValue(vpcConfig.SubnetIds, resources));
  const reached = Object.values(resources).some((r) => {
    if (r.Type === 'AWS::EC2::Route') return r.Properties?.NatGatewayId !== undefined;
    if (r.Type !== 'AWS::EC2::VPCEndpoint') return false;
    const props = r.Properties ?? {};
    if (endpointService(props.ServiceName, resources) !== service) return false;
    if (props.VpcEndpointType === 'Gateway') return ((props.RouteTableIds as unknown[]) ?? []).length > 0;
    const endpointSubnets = (resolveValue(props.SubnetIds, resources) ?? []) as string[];
    return endpointSubnets.some((subnet) => subnets.includes(JSON.stringify(subnet)));
  });
  return reached ? undefined : `${fn}: no endpoint or NAT route to ${service} from its subnets`;
}

/** Every problem of the calls on the template: calls a role refuses, services a function cannot reach. */
export async function callProblems(
  template: Template,
  calls: readonly RecordedCall[],
  env: NodeJS.ProcessEnv,
): Promise<string[]> {
  const map = new ResourceMap(template, env);
  const problems = new Set<string>();
  for (const call of calls) {
    for (const iamCall of map.iamCalls(call)) {
      const problem = await roleProblem(template, iamCall);
      if (problem) problems.add(problem);
    }
    const reach = reachProblem(template, call.function, call.service);
    if (reach) problems.add(reach);
  }
  return [...problems].sort();
}
