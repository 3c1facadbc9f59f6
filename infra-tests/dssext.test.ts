/**
 * The DSS-Ext door as the stack deploys it (docs/dss-ext.md#deployment): absent by default; with its
 * settings, the door function (its environment, least-privilege role, no HSM), its own REST API under
 * /dss/v1 with a web ACL per source, its two secrets, and the DSSEXT_* settings on the API and the CA.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { TEST_CA_PEM } from './support/layer-fixture';
import { environmentBytes } from '../cdk/lib/constructs/functions';
import { DeploymentSettingsError } from '../cdk/lib/errors';
import { parseSettings, PLACEHOLDER_DSSEXT_BASE_URL } from '../cdk/lib/settings';
import { API_STAGE, DSSEXT_BASE_PATH, DSSEXT_ROUTES, QUEUES, TABLES } from '@pipeline/resources';
import {
  actionsOf,
  CDK_JSON_CONTEXT,
  logicalId,
  resources,
  roleStatements,
  synthesize,
  type Synthesized,
} from './support/synth';

/** A throwaway self-signed certificate: the settings are checked by the functions' own reader. */
function certificate(cn: string, key: 'ec' | 'rsa:2048' = 'ec'): string {
  const algorithm = key === 'ec' ? ['ec', '-pkeyopt', 'ec_paramgen_curve:P-256'] : [key];
  const args = ['req', '-x509', '-newkey', ...algorithm, '-nodes', '-keyout', '/dev/null'];
  return execFileSync('openssl', [...args, '-subj', `/CN=${cn}`, '-days', '1'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
}

const E_SERVICE = certificate('e-service');
const OPERATOR = certificate('federation operator');
const CLIENTS = JSON.stringify([
  {
    entityId: 'https://eservice.example.se/sp',
    certificates: [E_SERVICE],
    returnUrls: ['https://eservice.example.se/signed'],
  },
]);
const DSSEXT = {
  dssExtBaseUrl: 'https://sign.example.se/dss/v1',
  dssExtSignServiceEntityId: 'https://sign.example.se/sign-service',
  dssExtClients: CLIENTS,
  dssExtMetadataTrust: OPERATOR,
  dssExtDefaultLoa: 'http://id.elegnamnden.se/loa/1.0/loa4',
};

let enabled: Synthesized;
let template: Template;
let disabled: Template;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- synthesized CloudFormation JSON is untyped
type Json = Record<string, any>;
const fnId = (t: Template, name: string): string =>
  logicalId(t, 'AWS::Lambda::Function', `Functions/${name}/Resource`);
const roleId = (t: Template, name: string): string =>
  logicalId(t, 'AWS::IAM::Role', `Functions/${name}Role/Resource`);
const env = (t: Template, name: string): Json =>
  (resources(t, 'AWS::Lambda::Function')[fnId(t, name)].Properties as Json).Environment.Variables;
const secretId = (t: Template, which: string): string =>
  logicalId(t, 'AWS::SecretsManager::Secret', `DssExtSecrets/${which}/Resource`);
const tableId = (key: keyof typeof TABLES): string =>
  logicalId(template, 'AWS::DynamoDB::Table', `Tables/${TABLES[key].id}/Resource`);
const statementsOn = (name: string, id: string): Json[] =>
  roleStatements(template, roleId(template, name)).filter((s) =>
    JSON.stringify(s.Resource).includes(`"${id}"`),
  );
const actionsOn = (name: string, id: string): string[] => statementsOn(name, id).flatMap(actionsOf).sort();

beforeAll(() => {
  enabled = synthesize(DSSEXT, { bundle: false });
  template = enabled.template;
  disabled = synthesize({}, { bundle: false }).template;
}, 240_000);

/** A deploy's context (no placeholders), complete but for the door's settings. */
function deployContext(): Record<string, unknown> {
  const caCert = join(mkdtempSync(join(tmpdir(), 'dssext-settings-')), 'customerCA.crt');
  writeFileSync(caCert, TEST_CA_PEM);
  return {
    cloudHsmLayerPath: 'x',
    hsmClusterId: 'cluster-abc',
    hsmSecurityGroupId: 'sg-0123abcd',
    hsmCaCertPath: caCert,
    vpcId: 'vpc-0123abcd',
    vpcCidr: '10.0.0.0/16',
    vpcAvailabilityZones: 'eu-north-1a,eu-north-1b',
    vpcIsolatedSubnetIds: 'subnet-0aaa,subnet-0bbb',
    vpcIsolatedRouteTableIds: 'rtb-0aaa,rtb-0bbb',
    lambdaConcurrencyQuota: '1000',
    identityIssuers: 'https://idp.example.se',
    cscBaseUrl: 'https://sign.example.se/csc/v2',
    apiClients: 'tax-agency=arn:aws:iam::123456789012:role/tax-agency',
    pkiEdgeWebAclArn:
      'arn:aws:wafv2:us-east-1:123456789012:global/webacl/PkiEdge/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
  };
}

describe('settings', () => {
  const settingsOf = (context: Record<string, unknown>, placeholders = true) =>
    parseSettings(
      (key) =>
        ({
          ...CDK_JSON_CONTEXT,
          ...(placeholders ? { allowPlaceholderLayer: true } : deployContext()),
          ...context,
        })[key],
    );
  const errorOf = (context: Record<string, unknown>, placeholders = true): DeploymentSettingsError => {
    try {
      settingsOf(context, placeholders);
    } catch (err) {
      if (err instanceof DeploymentSettingsError) return err;
      throw err;
    }
    throw new Error('no error');
  };

  it('is off by default, on with dssExtBaseUrl or dssExtEnabled=true, off with dssExtEnabled=false', () => {
    expect(settingsOf({}).dssExt).toBeUndefined();
    expect(settingsOf({}, false).dssExt).toBeUndefined();
    expect(settingsOf(DSSEXT, false).dssExt).toEqual({
      baseUrl: DSSEXT.dssExtBaseUrl,
      signServiceEntityId: DSSEXT.dssExtSignServiceEntityId,
      clients: CLIENTS,
      metadataTrust: OPERATOR,
      defaultLoa: DSSEXT.dssExtDefaultLoa,
      rateLimit: 20,
      burstLimit: 40,
      sourcePerMinute: 600,
      signSourcePerMinute: 60,
    });
    expect(settingsOf({ ...DSSEXT, dssExtEnabled: 'false' }, false).dssExt).toBeUndefined();
    // cdk.json may hold the registrations as JSON.
    expect(settingsOf({ ...DSSEXT, dssExtClients: JSON.parse(CLIENTS) }, false).dssExt?.clients).toBe(
      CLIENTS,
    );
    // A placeholder synth with the door on and nothing set: placeholders, which no deploy takes.
    expect(settingsOf({ dssExtEnabled: true }).dssExt?.baseUrl).toBe(PLACEHOLDER_DSSEXT_BASE_URL);
    expect(errorOf({ dssExtEnabled: 'yes' }).contextKey).toBe('dssExtEnabled');
  });

  it('a deploy needs each required value, checked by the functions’ own reader, the error naming its key', () => {
    for (const key of [
      'dssExtBaseUrl',
      'dssExtSignServiceEntityId',
      'dssExtClients',
      'dssExtMetadataTrust',
    ]) {
      const error = errorOf({ ...DSSEXT, dssExtEnabled: 'true', [key]: undefined }, false);
      expect([error.contextKey, error.message]).toEqual([key, expect.stringContaining(`${key} is required`)]);
    }
    for (const bad of ['https://sign.example.se/csc/v2', 'http://sign.example.se/dss/v1']) {
      expect(errorOf({ ...DSSEXT, dssExtBaseUrl: bad }, false).contextKey).toBe('dssExtBaseUrl');
    }
    expect(errorOf({ ...DSSEXT, dssExtClients: '[]' }, false)).toMatchObject({
      contextKey: 'dssExtClients',
      message: expect.stringContaining('at least one e-service'),
    });
    expect(errorOf({ ...DSSEXT, dssExtClients: '[{"entityId":"x"}]' }, false).contextKey).toBe(
      'dssExtClients',
    );
    expect(errorOf({ ...DSSEXT, dssExtMetadataTrust: 'not a certificate' }, false).contextKey).toBe(
      'dssExtMetadataTrust',
    );
    // Its throttle within the stage's (200/s by default); a WAF rate rule takes at least 10.
    expect(errorOf({ ...DSSEXT, dssExtRateLimit: '201' }, false).contextKey).toBe('dssExtRateLimit');
    expect(errorOf({ ...DSSEXT, dssExtSignSourceRequestsPerMinute: '9' }, false).contextKey).toBe(
      'dssExtSignSourceRequestsPerMinute',
    );
  });
});

describe('deployed when enabled', () => {
  it('the door function: its settings, its service key and the metadata as secrets, the API intake, in the VPC', () => {
    const variables = env(template, 'Dssext');
    expect(variables).toMatchObject({
      DSSEXT_BASE_URL: DSSEXT.dssExtBaseUrl,
      DSSEXT_SIGN_SERVICE_ENTITY_ID: DSSEXT.dssExtSignServiceEntityId,
      DSSEXT_CLIENTS: CLIENTS,
      DSSEXT_METADATA_TRUST: OPERATOR,
      DSSEXT_DEFAULT_LOA: DSSEXT.dssExtDefaultLoa,
      DSSEXT_SERVICE_KEY: {
        'Fn::Join': ['', ['secretsmanager:', { Ref: secretId(template, 'ServiceKey') }]],
      },
      DSSEXT_FEDERATION_METADATA: {
        'Fn::Join': ['', ['secretsmanager:', { Ref: secretId(template, 'FederationMetadata') }]],
      },
      [TABLES.dssExt.envVar]: { Ref: tableId('dssExt') },
      [TABLES.requests.envVar]: { Ref: tableId('requests') },
      [QUEUES.signRequests.envVar]: expect.anything(),
      REVOKE_FUNCTION_NAME: { 'Fn::GetAtt': [fnId(template, 'Revoke'), 'Arn'] },
      IDENTITY_TRUSTED_ISSUERS: expect.any(String),
    });
    expect(variables.HSM_PIN_SOURCE).toBeUndefined();
    const props = resources(template, 'AWS::Lambda::Function')[fnId(template, 'Dssext')].Properties as Json;
    expect(props.VpcConfig).toBeDefined();
    expect(props.Layers ?? []).toEqual([]);
  });

  it('the API and the CA get the DSSEXT_* settings and the metadata secret, never the service key', () => {
    for (const name of ['Api', 'Ca']) {
      const variables = env(template, name);
      expect(variables).toMatchObject({
        DSSEXT_BASE_URL: DSSEXT.dssExtBaseUrl,
        DSSEXT_SIGN_SERVICE_ENTITY_ID: DSSEXT.dssExtSignServiceEntityId,
        DSSEXT_CLIENTS: CLIENTS,
        DSSEXT_METADATA_TRUST: OPERATOR,
        DSSEXT_DEFAULT_LOA: DSSEXT.dssExtDefaultLoa,
        DSSEXT_FEDERATION_METADATA: {
          'Fn::Join': ['', ['secretsmanager:', { Ref: secretId(template, 'FederationMetadata') }]],
        },
      });
      expect(variables.DSSEXT_SERVICE_KEY).toBeUndefined();
      expect(actionsOn(name, secretId(template, 'FederationMetadata'))).toEqual([
        'secretsmanager:DescribeSecret',
        'secretsmanager:GetSecretValue',
      ]);
      expect(actionsOn(name, secretId(template, 'ServiceKey'))).toEqual([]);
    }
    // No other function reads the DSS-Ext settings (the CSC door submits no DSS-Ext evidence).
    for (const name of ['Csc', 'Signer', 'JwksRefresh']) {
      expect(Object.keys(env(template, name)).filter((k) => k.startsWith('DSSEXT_'))).toEqual([]);
    }
  });

  it("the door's role: its REQ# and FLOW# items, the API intake of POST /sign-requests, revoke as invoke, both secrets, no HSM secret", () => {
    expect(statementsOn('Dssext', tableId('dssExt'))).toEqual([
      expect.objectContaining({
        Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['REQ#*', 'FLOW#*'] } },
      }),
    ]);
    expect(actionsOn('Dssext', tableId('requests'))).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
    ]);
    expect(actionsOn('Dssext', tableId('keyPool'))).toEqual(['dynamodb:BatchGetItem']);
    expect(actionsOn('Dssext', tableId('demand'))).toEqual(['dynamodb:UpdateItem']);
    expect(actionsOn('Dssext', tableId('assertions'))).toEqual(['dynamodb:PutItem']);
    for (const key of ['certificates', 'audit', 'csc'] as const) {
      expect(actionsOn('Dssext', tableId(key))).toEqual([]);
    }
    // No other function touches the door's table.
    for (const name of ['Api', 'Ca', 'Csc', 'Signer', 'Reconcile']) {
      expect(actionsOn(name, tableId('dssExt'))).toEqual([]);
    }
    const queue = logicalId(template, 'AWS::SQS::Queue', `SignQueue/${QUEUES.signRequests.id}/Resource`);
    expect(actionsOn('Dssext', queue)).toEqual(['sqs:SendMessage']);
    const statements = roleStatements(template, roleId(template, 'Dssext'));
    const invokes = statements.filter((st) => JSON.stringify(st.Action).includes('lambda:'));
    expect(invokes.flatMap(actionsOf)).toEqual(['lambda:InvokeFunction']);
    expect(invokes.map((st) => st.Resource)).toEqual([{ 'Fn::GetAtt': [fnId(template, 'Revoke'), 'Arn'] }]);
    expect(statements.flatMap(actionsOf).filter((a) => a.startsWith('execute-api:'))).toEqual([]);
    for (const which of ['ServiceKey', 'FederationMetadata']) {
      expect(actionsOn('Dssext', secretId(template, which))).toEqual([
        'secretsmanager:DescribeSecret',
        'secretsmanager:GetSecretValue',
      ]);
    }
    for (const user of ['Pool', 'Ca']) {
      const id = logicalId(template, 'AWS::SecretsManager::Secret', `HsmAccess/${user}CryptoUser/Resource`);
      expect(actionsOn('Dssext', id)).toEqual([]);
    }
  });

  it('the secrets: encrypted with the secrets key, retained, each refusing every function but its readers', () => {
    const secretsKey = logicalId(template, 'AWS::KMS::Key', 'HsmAccess/SecretsKey/Resource');
    const readers: Record<string, string[]> = {
      ServiceKey: ['Dssext'],
      FederationMetadata: ['Dssext', 'Api', 'Ca'],
    };
    for (const [which, names] of Object.entries(readers)) {
      const secret = resources(template, 'AWS::SecretsManager::Secret')[secretId(template, which)];
      expect(secret.Properties!.KmsKeyId).toEqual({ 'Fn::GetAtt': [secretsKey, 'Arn'] });
      expect(secret.DeletionPolicy).toBe('RetainExceptOnCreate');
      const policy = Object.values(resources(template, 'AWS::SecretsManager::ResourcePolicy')).find(
        (p) => JSON.stringify(p.Properties!.SecretId) === JSON.stringify({ Ref: secretId(template, which) }),
      )!;
      const deny = (policy.Properties!.ResourcePolicy as Json).Statement.find(
        (s: Json) => s.Sid === 'OnlyItsFunctions',
      );
      expect(deny).toMatchObject({ Effect: 'Deny', Action: 'secretsmanager:GetSecretValue' });
      const allowed = deny.Condition.ArnNotEquals['aws:PrincipalArn'];
      expect(
        (Array.isArray(allowed) ? allowed : [allowed]).map((a: Json) => a['Fn::GetAtt'][0]).sort(),
      ).toEqual(names.map((n) => roleId(template, n)).sort());
    }
  });

  it('its own REST API: every DSSEXT_ROUTES method under /dss/v1 on the door, open, throttled, logged, with a web ACL per source', () => {
    const api = logicalId(template, 'AWS::ApiGateway::RestApi', 'DssExtApi/RestApi/Resource');
    const door = fnId(template, 'Dssext');
    const methods = Object.values(resources(template, 'AWS::ApiGateway::Method')).filter(
      (m) => JSON.stringify(m.Properties!.RestApiId) === JSON.stringify({ Ref: api }),
    );
    expect(methods).toHaveLength(DSSEXT_ROUTES.length);
    for (const method of methods) {
      expect(method.Properties).toMatchObject({ AuthorizationType: 'NONE', ApiKeyRequired: false });
      expect(JSON.stringify(method.Properties!.Integration)).toContain(`"${door}"`);
    }
    const paths = Object.entries(resources(template, 'AWS::ApiGateway::Resource'))
      .filter(([, r]) => JSON.stringify(r.Properties!.RestApiId) === JSON.stringify({ Ref: api }))
      .map(([, r]) => r.Properties!.PathPart);
    for (const route of DSSEXT_ROUTES) {
      for (const part of `${DSSEXT_BASE_PATH}${route.resource}`.split('/').filter(Boolean)) {
        expect(paths).toContain(part);
      }
    }
    const stage = Object.values(resources(template, 'AWS::ApiGateway::Stage')).find(
      (s) => JSON.stringify(s.Properties!.RestApiId) === JSON.stringify({ Ref: api }),
    )!;
    expect(stage.Properties).toMatchObject({
      StageName: API_STAGE,
      TracingEnabled: true,
      AccessLogSetting: expect.anything(),
      MethodSettings: [
        expect.objectContaining({ ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40, LoggingLevel: 'ERROR' }),
      ],
    });
    const acl = logicalId(template, 'AWS::WAFv2::WebACL', 'DssExtApi/Limits');
    const rules = (resources(template, 'AWS::WAFv2::WebACL')[acl].Properties as Json).Rules;
    expect(rules.map((r: Json) => [r.Name, r.Statement.RateBasedStatement.Limit])).toEqual([
      ['PerSource', 600],
      ['SignPerSource', 60],
    ]);
    expect(rules[1].Statement.RateBasedStatement.ScopeDownStatement.ByteMatchStatement.SearchString).toBe(
      `${DSSEXT_BASE_PATH}/sign`,
    );
    const association = Object.values(resources(template, 'AWS::WAFv2::WebACLAssociation')).find(
      (a) => JSON.stringify(a.Properties!.WebACLArn) === JSON.stringify({ 'Fn::GetAtt': [acl, 'Arn'] }),
    );
    expect(JSON.stringify(association?.Properties!.ResourceArn)).toContain(api);
  });

  it('alarms on the door function and its stage; outputs its URL and secrets', () => {
    const alarms = Object.keys(resources(template, 'AWS::CloudWatch::Alarm'));
    expect(alarms.some((id) => id.includes('DssextErrors'))).toBe(true);
    expect(alarms.some((id) => id.includes('DssExtApi5xx'))).toBe(true);
    const outputs = Object.keys(template.toJSON().Outputs as Json);
    expect(outputs).toEqual(
      expect.arrayContaining([
        'DssExtApiUrl',
        'DssExtServiceKeySecretArn',
        'DssExtFederationMetadataSecretArn',
      ]),
    );
  });

  it('cdk-nag: no open finding', () => {
    const report = new AwsSolutionsChecks().validateScope(enabled.stack);
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe("Lambda's 4 KB of environment", () => {
  it('counts names, values and the parts of a Fn::Join, a reference as an ARN', () => {
    expect(environmentBytes({ AB: 'xyz', REF: { Ref: 'T' } })).toBe(2 + 3 + 3 + 110);
    expect(environmentBytes({ J: { 'Fn::Join': ['', ['secretsmanager:', { Ref: 'S' }]] } })).toBe(
      1 + 15 + 110,
    );
  });

  it('refuses registrations whose certificates would not fit the functions’ environment', () => {
    const many = JSON.stringify(
      ['a', 'b', 'c'].map((name) => ({
        entityId: `https://${name}.example.se/sp`,
        certificates: [certificate(`e-service ${name}`, 'rsa:2048')],
        returnUrls: [`https://${name}.example.se/signed`],
      })),
    );
    expect(() => synthesize({ ...DSSEXT, dssExtClients: many }, { bundle: false })).toThrow(
      /function api: its environment variables come to about \d+ bytes, over Lambda's 4096.*dssExtClients/,
    );
  });
});

describe('absent by default', () => {
  it('no door function, REST API, web ACL, secrets or DSSEXT_* settings anywhere', () => {
    const paths = JSON.stringify(disabled.toJSON());
    expect(paths).not.toContain('DssExtApi');
    expect(paths).not.toContain('DssExtSecrets');
    expect(paths).not.toContain('Functions/Dssext');
    for (const fn of Object.values(resources(disabled, 'AWS::Lambda::Function'))) {
      const variables = ((fn.Properties as Json).Environment?.Variables ?? {}) as Json;
      expect(Object.keys(variables).filter((k) => k.startsWith('DSSEXT_'))).toEqual([]);
    }
    // The table is there (TABLES), used by nobody.
    expect(
      roleStatementsAll(disabled).filter((s) =>
        JSON.stringify(s.Resource).includes(
          `"${logicalId(disabled, 'AWS::DynamoDB::Table', `Tables/${TABLES.dssExt.id}/Resource`)}"`,
        ),
      ),
    ).toEqual([]);
  });
});

function roleStatementsAll(t: Template): Json[] {
  return Object.values(resources(t, 'AWS::IAM::Policy')).flatMap(
    (p) => (p.Properties!.PolicyDocument as { Statement: Json[] }).Statement,
  );
}
