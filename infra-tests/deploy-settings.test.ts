/**
 * A deployable configuration: a built layer (fake, checked by manifest), an existing VPC by attributes,
 * scheduled provisioned-concurrency scaling. Code assets are not bundled here (stack.test.ts does that).
 */
import { rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { fakeLayer, TEST_CA_PEM } from './support/layer-fixture';
import { logicalId, resources, synthesize, type Synthesized } from './support/synth';

const EDGE_WEB_ACL =
  'arn:aws:wafv2:us-east-1:123456789012:global/webacl/PkiEdge/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b';
let synth: Synthesized;
let template: Template;
const cleanup: string[] = [];

beforeAll(() => {
  const layerDir = fakeLayer();
  const certDir = mkdtempSync(join(tmpdir(), 'cluster-ca-'));
  const certPath = join(certDir, 'customerCA.crt');
  writeFileSync(certPath, TEST_CA_PEM);
  cleanup.push(layerDir, certDir);
  synth = synthesize(
    {
      allowPlaceholderLayer: false,
      cloudHsmLayerPath: layerDir,
      hsmClusterId: 'cluster-abc123',
      hsmSecurityGroupId: 'sg-0123456789abcdef0',
      hsmCaCertPath: certPath,
      vpcId: 'vpc-0123456789abcdef0',
      vpcCidr: '10.20.0.0/16',
      vpcAvailabilityZones: 'eu-north-1a,eu-north-1b',
      vpcIsolatedSubnetIds: 'subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb',
      vpcCreateEndpoints: 'true',
      vpcIsolatedRouteTableIds: 'rtb-0aaaaaaaaaaaaaaaa,rtb-0bbbbbbbbbbbbbbbb',
      signerProvisionedConcurrency: '4',
      poolFallbackMaxInFlight: '16',
      poolFallbackWaitMs: '5000',
      signerScheduledScaling: JSON.stringify([
        { name: 'deadline-peak', cron: '0 6 ? * MON-FRI *', min: 40, max: 60 },
        { name: 'evening', cron: '0 18 ? * MON-FRI *', min: 4, max: 4 },
      ]),
      apiClients:
        'tax-agency=arn:aws:iam::123456789012:role/tax-agency,pension-agency=arn:aws:iam::123456789012:role/pension-agency',
      apiStageRateLimit: '1000',
      apiStageBurstLimit: '2000',
      apiClientRateLimit: '300',
      apiClientBurstLimit: '600',
      apiClientQuotaPerDay: '5000000',
      identityIssuers: 'https://idp.example.se,https://eid.example.org/op',
      identityTrustedClients: 'arn:aws:iam::123456789012:role/legacy-eservice',
      pkiEdgeWebAclArn: EDGE_WEB_ACL,
      cscBaseUrl: 'https://sign.example.se/csc/v2',
      cscIdpIssuer: 'https://eid.example.org/op',
      cscIdpRedirectUri: 'https://sign.example.se/csc/v2/oauth2/callback',
    },
    { bundle: false },
  );
  template = synth.template;
}, 180_000);

afterAll(() => cleanup.forEach((d) => rmSync(d, { recursive: true, force: true })));

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
