/**
 * A deployable configuration: a built layer (fake, checked by manifest), an existing VPC by attributes,
 * scheduled provisioned-concurrency scaling. Code assets are not bundled here (stack.test.ts does that).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { simulate } from './support/iam-simulate';
import { EDGE_WEB_ACL, synthesizeDeployLike } from './support/deploy-like';
import { TEST_CA_PEM } from './support/layer-fixture';
import { checkConcurrency, FUNCTION_SPECS } from '../cdk/lib/constructs/functions';
import { DeploymentSettingsError } from '../cdk/lib/errors';
import { parseSettings } from '../cdk/lib/settings';
import { actionsOf, logicalId, resources, roleStatements, type Synthesized } from './support/synth';

let synth: Synthesized;
let template: Template;
const cleanup: Array<() => void> = [];

beforeAll(() => {
  const built = synthesizeDeployLike();
  cleanup.push(built.cleanup);
  synth = built.synth;
  template = synth.template;
}, 180_000);

afterAll(() => cleanup.forEach((done) => done()));

it('uses the existing VPC and its subnets: no VPC, subnets or flow log created', () => {
  template.resourceCountIs('AWS::EC2::VPC', 0);
  template.resourceCountIs('AWS::EC2::Subnet', 0);
  const signer = logicalId(template, 'AWS::Lambda::Function', 'Functions/Signer/Resource');
  expect(resources(template, 'AWS::Lambda::Function')[signer].Properties!.VpcConfig).toMatchObject({
    SubnetIds: ['subnet-0aaaaaaaaaaaaaaaa', 'subnet-0bbbbbbbbbbbbbbbb'],
  });
  template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
    VpcId: 'vpc-0123456789abcdef0',
    VpcEndpointType: 'Gateway',
    RouteTableIds: ['rtb-0aaaaaaaaaaaaaaaa', 'rtb-0bbbbbbbbbbbbbbbb'],
  });
});

it('deploys: no placeholder guard in the template, the real layer is the asset', () => {
  const json = template.toJSON();
  expect(json.Rules?.RefusePlaceholderLayer).toBeUndefined();
  expect(json.Parameters?.PlaceholderLayerInUse).toBeUndefined();
  template.hasResourceProperties('AWS::Lambda::LayerVersion', {
    Description: Match.stringLikeRegexp('^CloudHSM Client SDK 5'),
    CompatibleArchitectures: ['x86_64'],
    CompatibleRuntimes: ['nodejs24.x'],
  });
  template.hasResourceProperties('AWS::SSM::Parameter', {
    Name: '/signing-pipeline/cloudhsm/cluster-abc123/customer-ca.pem',
    Value: TEST_CA_PEM,
  });
});

it("hands the on-the-fly fallback's bounds to the signer", () => {
  const signer = logicalId(template, 'AWS::Lambda::Function', 'Functions/Signer/Resource');
  const properties = resources(template, 'AWS::Lambda::Function')[signer].Properties as {
    Environment: { Variables: Record<string, unknown> };
  };
  expect(properties.Environment.Variables).toMatchObject({
    POOL_EMPTY_POLICY: 'fallback',
    POOL_FALLBACK_MAX_IN_FLIGHT: '16',
    POOL_FALLBACK_WAIT_MS: '5000',
  });
});

it('opens the HSM ports on the real cluster security group', () => {
  template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
    GroupId: 'sg-0123456789abcdef0',
    FromPort: 2223,
    ToPort: 2225,
  });
});

it('scales the signer alias provisioned concurrency on schedule for forecast peaks', () => {
  template.hasResourceProperties('AWS::Lambda::Alias', {
    ProvisionedConcurrencyConfig: { ProvisionedConcurrentExecutions: 4 },
  });
  template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
    ScalableDimension: 'lambda:function:ProvisionedConcurrency',
    MinCapacity: 4,
    MaxCapacity: 60,
    ScheduledActions: [
      {
        ScheduledActionName: 'deadline-peak',
        Schedule: 'cron(0 6 ? * MON-FRI *)',
        ScalableTargetAction: { MinCapacity: 40, MaxCapacity: 60 },
      },
      {
        ScheduledActionName: 'evening',
        Schedule: 'cron(0 18 ? * MON-FRI *)',
        ScalableTargetAction: { MinCapacity: 4, MaxCapacity: 4 },
      },
    ],
  });
});

it('creates one API key per e-service in the usage plan, with the throttles and quota set', () => {
  template.resourceCountIs('AWS::ApiGateway::ApiKey', 2);
  template.resourceCountIs('AWS::ApiGateway::UsagePlanKey', 2);
  template.hasResourceProperties('AWS::ApiGateway::UsagePlan', {
    Throttle: { RateLimit: 300, BurstLimit: 600 },
    Quota: { Limit: 5_000_000, Period: 'DAY' },
  });
  template.hasResourceProperties('AWS::ApiGateway::Stage', {
    MethodSettings: Match.arrayWith([
      Match.objectLike({
        HttpMethod: '*',
        ResourcePath: '/*',
        ThrottlingRateLimit: 1000,
        ThrottlingBurstLimit: 2000,
      }),
    ]),
  });
});

it('gives the CSC function its base URL, the provider and redirect URI set, and the API intake it runs', () => {
  const csc = logicalId(template, 'AWS::Lambda::Function', 'Functions/Csc/Resource');
  const variables = (
    resources(template, 'AWS::Lambda::Function')[csc].Properties!.Environment as {
      Variables: Record<string, unknown>;
    }
  ).Variables;
  expect(variables).toMatchObject({
    CSC_BASE_URL: 'https://sign.example.se/csc/v2',
    CSC_IDP_ISSUER: 'https://eid.example.org/op',
    CSC_IDP_REDIRECT_URI: 'https://sign.example.se/csc/v2/oauth2/callback',
    IDENTITY_TRUSTED_ISSUERS: expect.anything(),
    POOL_FALLBACK_MAX_IN_FLIGHT: '16',
    CSC_TABLE_NAME: expect.anything(),
    SIGN_QUEUE_URL: expect.anything(),
  });
});

it('passes cdk-nag with the same acknowledgements', () => {
  const report = new AwsSolutionsChecks().validateScope(synth.stack);
  expect(report.violations.map((v) => v.ruleName)).toEqual([]);
});

it("puts the PKI distribution behind the edge web ACL, so CloudFront's own finding needs no acknowledgement", () => {
  template.hasResourceProperties('AWS::CloudFront::Distribution', {
    DistributionConfig: Match.objectLike({ WebACLId: EDGE_WEB_ACL }),
  });
  expect(synth.stack.nagAcknowledgements.map((a) => a.id)).not.toContain('AwsSolutions-CFR2');
});

it("keeps each trusted issuer's keys and each registered client's keys in their own parameters, read by the API and the CA", () => {
  for (const [i, issuer] of ['https://idp.example.se', 'https://eid.example.org/op'].entries()) {
    template.hasResourceProperties('AWS::SSM::Parameter', {
      Name: `/signing-pipeline/identity/jwks/${i}`,
      Tier: 'Advanced',
      Description: Match.stringLikeRegexp(issuer.replace(/[.]/g, '\\.')),
    });
  }
  const api = logicalId(template, 'AWS::Lambda::Function', 'Functions/Api/Resource');
  const variables = (
    resources(template, 'AWS::Lambda::Function')[api].Properties as {
      Environment: { Variables: Record<string, string> };
    }
  ).Environment.Variables;
  expect(JSON.parse(variables.IDENTITY_TRUSTED_ISSUERS)).toEqual([
    { issuer: 'https://idp.example.se', jwks: 'ssm:/signing-pipeline/identity/jwks/0' },
    { issuer: 'https://eid.example.org/op', jwks: 'ssm:/signing-pipeline/identity/jwks/1' },
  ]);
  expect(variables).toMatchObject({ IDENTITY_MODE: 'assertion', IDENTITY_CLIENT_ID: 'signing-service' });
  expect(JSON.parse(variables.IDENTITY_CLIENT_KEYS)).toEqual([
    {
      client: 'arn:aws:iam::123456789012:role/legacy-eservice',
      jwks: 'ssm:/signing-pipeline/identity/clients/0',
    },
  ]);
  template.hasResourceProperties('AWS::SSM::Parameter', {
    Name: '/signing-pipeline/identity/clients/0',
    Description: Match.stringLikeRegexp('legacy-eservice'),
  });
  // The CA verifies the same evidence: it gets the same identity settings.
  const ca = logicalId(template, 'AWS::Lambda::Function', 'Functions/Ca/Resource');
  const caVariables = (
    resources(template, 'AWS::Lambda::Function')[ca].Properties as {
      Environment: { Variables: Record<string, string> };
    }
  ).Environment.Variables;
  expect(caVariables.IDENTITY_CLIENT_KEYS).toBe(variables.IDENTITY_CLIENT_KEYS);
  expect(caVariables.IDENTITY_TRUSTED_ISSUERS).toBe(variables.IDENTITY_TRUSTED_ISSUERS);
});

describe('what a first deploy into a fresh account needs', () => {
  const roleOf = (name: string): string =>
    logicalId(template, 'AWS::IAM::Role', `Functions/${name}Role/Resource`);

  it('routes every AWS service the functions call from the isolated subnets through an endpoint of this stack', () => {
    const endpoints = Object.values(resources(template, 'AWS::EC2::VPCEndpoint')).map((e) => e.Properties!);
    // `com.amazonaws.<region>.<service>`, as a string or joined with the region reference.
    const serviceOf = (e: Record<string, unknown>): string =>
      JSON.stringify(e.ServiceName)
        .replace(/[^a-z0-9.-]+$/, '')
        .split('.')
        .pop()!;
    const gateways = endpoints.filter((e) => e.VpcEndpointType === 'Gateway').map(serviceOf);
    expect(gateways.sort()).toEqual(['dynamodb', 's3']);
    for (const gateway of endpoints.filter((e) => e.VpcEndpointType === 'Gateway')) {
      expect(gateway.RouteTableIds).toEqual(['rtb-0aaaaaaaaaaaaaaaa', 'rtb-0bbbbbbbbbbbbbbbb']);
    }
    const interfaces = endpoints.filter((e) => e.VpcEndpointType === 'Interface').map(serviceOf);
    expect(interfaces.sort()).toEqual(
      ['lambda', 'logs', 'monitoring', 'secretsmanager', 'sqs', 'ssm', 'xray'].sort(),
    );
  });

  it.each([
    ['Crl', 'PublicPki/Objects'],
    ['Ocsp', 'PublicPki/Objects'],
    ['Signer', 'PublicPki/Objects'],
    ['AuditCheckpoint', 'AuditAnchors/Bucket'],
  ])('%s may list its bucket, so a missing object is 404 NoSuchKey, not 403', (fn, bucketPath) => {
    const bucket = logicalId(template, 'AWS::S3::Bucket', `${bucketPath}/Resource`);
    const lists = roleStatements(template, roleOf(fn)).filter(
      (s) =>
        actionsOf(s).includes('s3:ListBucket') &&
        JSON.stringify(s.Resource) === JSON.stringify({ 'Fn::GetAtt': [bucket, 'Arn'] }),
    );
    expect(lists).toHaveLength(1);
  });

  it('retains nothing a failed first create leaves behind: RetainExceptOnCreate, never plain Retain', () => {
    const all = template.toJSON().Resources as Record<string, { Type: string; DeletionPolicy?: string }>;
    const retained = Object.entries(all).filter(([, r]) => r.DeletionPolicy === 'Retain');
    expect(retained.map(([id, r]) => `${r.Type} ${id}`)).toEqual([]);
    template.hasResource('AWS::SSM::Parameter', {
      Properties: Match.objectLike({ Name: '/signing-pipeline/ca/issuing.pem' }),
      DeletionPolicy: 'RetainExceptOnCreate',
    });
    expect(
      Object.values(all).filter((r) => r.DeletionPolicy === 'RetainExceptOnCreate').length,
    ).toBeGreaterThan(20);
  });

  it('names the crypto users as CloudHSM allows (letters, digits, underscores)', () => {
    const usernames = Object.values(resources(template, 'AWS::SecretsManager::Secret'))
      .map((s) => s.Properties!.GenerateSecretString as { SecretStringTemplate?: string } | undefined)
      .filter((g) => g?.SecretStringTemplate)
      .map((g) => (JSON.parse(g!.SecretStringTemplate!) as { username: string }).username);
    expect(usernames).toHaveLength(5);
    for (const name of usernames) expect(name).toMatch(/^[A-Za-z0-9_]{1,31}$/);
  });
});

describe('what clients and operators see of it', () => {
  /** docs/api.md's error table: code -> status. */
  const documented = (): Map<string, string> => {
    const doc = readFileSync(join(__dirname, '../docs/api.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| (\d{3})\s+\| `([A-Z_]+)`/gm)];
    return new Map(rows.map(([, status, code]) => [code, status]));
  };

  /** The gateway responses of the REST API at `path` (its construct path). */
  const gatewayResponses = (path: string) => {
    const api = logicalId(template, 'AWS::ApiGateway::RestApi', path);
    return Object.values(resources(template, 'AWS::ApiGateway::GatewayResponse'))
      .map(
        (r) =>
          r.Properties as {
            RestApiId: { Ref?: string };
            ResponseType: string;
            StatusCode?: string;
            ResponseTemplates: Record<string, string>;
          },
      )
      .filter((r) => r.RestApiId.Ref === api);
  };

  it("answers every refusal of API Gateway's own in the documented error form", () => {
    const codes = documented();
    const responses = gatewayResponses('/Api/RestApi/Resource');
    // The catch-alls make every other type take the form; these are the ones a client meets most.
    for (const type of [
      'DEFAULT_4XX',
      'DEFAULT_5XX',
      'MISSING_AUTHENTICATION_TOKEN',
      'BAD_REQUEST_BODY',
      'BAD_REQUEST_PARAMETERS',
      'ACCESS_DENIED',
      'INVALID_SIGNATURE',
      'INVALID_API_KEY',
      'THROTTLED',
      'QUOTA_EXCEEDED',
      'INTEGRATION_TIMEOUT',
    ]) {
      expect(responses.map((r) => r.ResponseType)).toContain(type);
    }
    for (const response of responses) {
      const body = JSON.parse(response.ResponseTemplates['application/json']) as {
        error: { code: string; message: string };
      };
      expect(Object.keys(body)).toEqual(['error']);
      expect(typeof body.error.message).toBe('string');
      expect(codes.has(body.error.code)).toBe(true);
      if (response.StatusCode) expect(response.StatusCode).toBe(codes.get(body.error.code));
    }
    const missingToken = responses.find((r) => r.ResponseType === 'MISSING_AUTHENTICATION_TOKEN')!;
    expect(missingToken.StatusCode).toBe('404');
  });

  it("answers every refusal of API Gateway's own on the CSC API in the CSC error form docs/csc.md lists", () => {
    // docs/csc.md's error list: `code` status.
    const csc = readFileSync(join(__dirname, '../docs/csc.md'), 'utf8');
    const errors = new Map(
      [...csc.matchAll(/`([a-z_]+)` (\d{3})/g)].map(([, code, status]) => [code, status]),
    );
    expect(errors.get('too_many_requests')).toBe('429');
    const responses = gatewayResponses('CscApi/RestApi/Resource');
    expect(responses.map((r) => r.ResponseType)).toEqual(
      expect.arrayContaining(['DEFAULT_4XX', 'DEFAULT_5XX', 'MISSING_AUTHENTICATION_TOKEN', 'THROTTLED']),
    );
    for (const response of responses) {
      const body = JSON.parse(response.ResponseTemplates['application/json']) as Record<string, string>;
      expect(Object.keys(body)).toEqual(['error', 'error_description']);
      expect(errors.has(body.error)).toBe(true);
      // The catch-alls keep API Gateway's status; every other type has its error's.
      if (!response.ResponseType.startsWith('DEFAULT_')) {
        expect([response.ResponseType, response.StatusCode]).toEqual([
          response.ResponseType,
          errors.get(body.error),
        ]);
      }
    }
  });

  it('alarms on API and TSA function errors, API 5XX, Lambda throttles and HSM login failures, each with its runbook line', () => {
    const alarms = Object.entries(resources(template, 'AWS::CloudWatch::Alarm')).map(([, a]) =>
      String((a.Metadata as Record<string, string>)['aws:cdk:path']),
    );
    const operations = readFileSync(join(__dirname, '../docs/operations.md'), 'utf8');
    const runbook = operations.slice(operations.indexOf('## When an alarm pages'));
    for (const name of [
      'ApiErrors',
      'TsaErrors',
      'Api5xx',
      'CscApi5xx',
      'LambdaThrottles',
      'HsmLoginFailures',
    ]) {
      expect(alarms).toContain(`SigningPipelineStack/Observability/${name}/Resource`);
      expect(runbook).toContain(`**${name}**`);
    }
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: '5XXError',
      Namespace: 'AWS/ApiGateway',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Throttles',
      Namespace: 'AWS/Lambda',
    });
    // One filter per function that logs in to an HSM, on its own log group.
    const filters = Object.values(resources(template, 'AWS::Logs::MetricFilter')).map((f) => f.Properties!);
    const hsmFunctions = ['Signer', 'Keygen', 'Ca', 'Revoke', 'Crl', 'Ocsp', 'Tsa', 'AuditCheckpoint'];
    expect(
      filters
        .filter((f) => JSON.stringify(f.MetricTransformations).includes('HsmLoginFailures'))
        .map((f) => JSON.stringify(f.LogGroupName))
        .sort(),
    ).toEqual(
      hsmFunctions
        .map((name) =>
          JSON.stringify({
            Ref: logicalId(template, 'AWS::Logs::LogGroup', `Functions/${name}Logs/Resource`),
          }),
        )
        .sort(),
    );
    expect(String(filters[0].FilterPattern)).toContain('HsmLoginError');
  });
});

describe("the account's Lambda concurrency", () => {
  const base = { allowPlaceholderLayer: 'true' };
  it("refuses at synth what a fresh account's quota cannot hold, naming the key", () => {
    const settings = parseSettings((key) => ({ ...base, lambdaConcurrencyQuota: '10' })[key]);
    expect(() => checkConcurrency(FUNCTION_SPECS, settings)).toThrow(DeploymentSettingsError);
    try {
      checkConcurrency(FUNCTION_SPECS, settings);
    } catch (err) {
      expect((err as DeploymentSettingsError).contextKey).toBe('lambdaConcurrencyQuota');
      expect((err as Error).message).toMatch(/reserve \d+ and the signer provisions up to 2 /);
    }
    const enough = parseSettings((key) => ({ ...base, lambdaConcurrencyQuota: '1000' })[key]);
    expect(() => checkConcurrency(FUNCTION_SPECS, enough)).not.toThrow();
  });
});

describe('the S3 calls the CRL, OCSP, signer and checkpointer make, evaluated as IAM would', () => {
  const roleOf = (name: string): string =>
    logicalId(template, 'AWS::IAM::Role', `Functions/${name}Role/Resource`);
  const bucket = (path: string): { id: string; arn: string } => {
    const id = logicalId(template, 'AWS::S3::Bucket', `${path}/Resource`);
    return { id, arn: `arn:aws:s3:::${id.toLowerCase()}` };
  };

  it.each([
    ['Crl', 'PublicPki/Objects', 'issuing.crl'],
    ['Ocsp', 'PublicPki/Objects', 'issuing.crl'],
    ['Signer', 'PublicPki/Objects', 'root.crl'],
    ['AuditCheckpoint', 'AuditAnchors/Bucket', 'checkpoints/00000000000000000001.json'],
  ])('%s reads %s/%s and may list the bucket, so a missing object is a 404', async (fn, path, key) => {
    const { id, arn } = bucket(path);
    const role = roleOf(fn);
    expect(
      await simulate(template, role, { action: 's3:GetObject', resource: `${arn}/${key}`, bucketId: id }),
    ).toBe('Allowed');
    expect(await simulate(template, role, { action: 's3:ListBucket', resource: arn, bucketId: id })).toBe(
      'Allowed',
    );
    // Reading is all: another object, or a delete, stays refused.
    expect(
      await simulate(template, role, {
        action: 's3:GetObject',
        resource: `${arn}/elsewhere.bin`,
        bucketId: id,
      }),
    ).not.toBe('Allowed');
    expect(
      await simulate(template, role, { action: 's3:DeleteObject', resource: `${arn}/${key}`, bucketId: id }),
    ).not.toBe('Allowed');
  });

  it('the checkpointer writes anchors only with If-None-Match; the publication writes its objects only', async () => {
    const anchors = bucket('AuditAnchors/Bucket');
    const put = (context: Record<string, string>) =>
      simulate(template, roleOf('AuditCheckpoint'), {
        action: 's3:PutObject',
        resource: `${anchors.arn}/checkpoints/00000000000000000001.json`,
        bucketId: anchors.id,
        context,
      });
    expect(await put({ 's3:if-none-match': '*' })).toBe('Allowed');
    expect(await put({})).toBe('ExplicitlyDenied');
    const pki = bucket('PublicPki/Objects');
    const publish = (key: string) =>
      simulate(template, roleOf('Crl'), {
        action: 's3:PutObject',
        resource: `${pki.arn}/${key}`,
        bucketId: pki.id,
      });
    expect(await publish('issuing.crl')).toBe('Allowed');
    expect(await publish('index.html')).not.toBe('Allowed');
  });
});
