/**
 * The grants that keep the audit log, the CA's items and the HSM crypto users' secrets each to their own
 * writers, in the synthesized template: item-level conditions (dynamodb:LeadingKeys), the secrets'
 * customer-managed key and resource policies, the anchors bucket's refusal of overwrites, and the alarm on
 * heads that moved backwards.
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { TABLES } from '@pipeline/resources';
import { actionsOf, logicalId, resources, roleStatements, synthesize } from './support/synth';

let template: Template;

beforeAll(() => {
  template = synthesize({}, { bundle: false }).template;
}, 240_000);

const roleId = (name: string): string =>
  logicalId(template, 'AWS::IAM::Role', `Functions/${name}Role/Resource`);
const tableId = (key: keyof typeof TABLES): string =>
  logicalId(template, 'AWS::DynamoDB::Table', `Tables/${TABLES[key].id}/Resource`);
/** A function's statements on a resource (by logical id), each with its actions and condition. */
const statementsOn = (name: string, id: string): { actions: string[]; condition: unknown }[] =>
  roleStatements(template, roleId(name))
    .filter((s) => JSON.stringify(s.Resource).includes(`"${id}"`))
    .map((s) => ({ actions: actionsOf(s).sort(), condition: s.Condition }));
const onKeys = (keys: string[]): unknown => ({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': keys } });

describe('item-level writes (dynamodb:LeadingKeys)', () => {
  it('the CA puts only its own certificate-table items (records and registers) and updates serials and credential releases only', () => {
    const puts = statementsOn('Ca', tableId('certificates')).filter((s) =>
      s.actions.includes('dynamodb:PutItem'),
    );
    expect(puts).toEqual([
      { actions: ['dynamodb:PutItem'], condition: onKeys(['REQ#*', 'SERIAL#*', 'ASSERTION#*', 'PUBKEY#*']) },
    ]);
    // Its updates: a superseded serial's revocation (a takeover's replacement) and a one-time credential's
    // release (REQ#, with a condition check of its SERIAL#); no other write.
    const updates = statementsOn('Ca', tableId('certificates')).filter((s) =>
      s.actions.includes('dynamodb:UpdateItem'),
    );
    expect(updates).toEqual([{ actions: ['dynamodb:UpdateItem'], condition: onKeys(['SERIAL#*', 'REQ#*']) }]);
    const writes = statementsOn('Ca', tableId('certificates'))
      .flatMap((s) => s.actions)
      .filter((a) => !['dynamodb:GetItem', 'dynamodb:BatchGetItem'].includes(a));
    expect(writes.sort()).toEqual(['dynamodb:ConditionCheckItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    // It reads the audit chains back (a Query of CHAIN# items) for a replacement's evidence.
    expect(statementsOn('Ca', tableId('audit')).filter((s) => s.actions.includes('dynamodb:Query'))).toEqual([
      { actions: ['dynamodb:Query'], condition: onKeys(['CHAIN#*']) },
    ]);
  });

  it.each(['Signer', 'Keygen', 'Ca', 'Revoke', 'Crl'])(
    '%s appends audit entries and moves chain heads only: no checkpoint item, no other write',
    (name) => {
      expect(statementsOn(name, tableId('audit'))).toEqual([
        { actions: ['dynamodb:GetItem'], condition: undefined },
        { actions: ['dynamodb:PutItem'], condition: onKeys(['CHAIN#*', 'HEAD#*']) },
        // The CA alone also reads chains back (a replacement's evidence).
        ...(name === 'Ca' ? [{ actions: ['dynamodb:Query'], condition: onKeys(['CHAIN#*']) }] : []),
      ]);
    },
  );

  it('the checkpointer puts checkpoint items only: it cannot write an entry or a chain head', () => {
    expect(statementsOn('AuditCheckpoint', tableId('audit'))).toEqual([
      { actions: ['dynamodb:BatchGetItem', 'dynamodb:GetItem'], condition: undefined },
      { actions: ['dynamodb:PutItem'], condition: onKeys(['CHECKPOINT', 'CHECKPOINT#HEAD']) },
    ]);
  });
});

describe('HSM crypto users secrets', () => {
  const USERS: [string, string[]][] = [
    ['Pool', ['Signer', 'Keygen', 'AuditCheckpoint']],
    ['Ca', ['Ca', 'Crl']],
    ['Ocsp', ['Ocsp']],
    ['Tsa', ['Tsa']],
    ['Revoke', ['Revoke']],
  ];
  const secretId = (user: string): string =>
    logicalId(template, 'AWS::SecretsManager::Secret', `HsmAccess/${user}CryptoUser/Resource`);
  const keyId = (): string => logicalId(template, 'AWS::KMS::Key', 'HsmAccess/SecretsKey/Resource');

  it('are encrypted with a customer-managed key that rotates and is retained', () => {
    const key = resources(template, 'AWS::KMS::Key')[keyId()];
    expect(key.Properties!.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('RetainExceptOnCreate');
    for (const [user] of USERS) {
      expect(resources(template, 'AWS::SecretsManager::Secret')[secretId(user)].Properties!.KmsKeyId).toEqual(
        {
          'Fn::GetAtt': [keyId(), 'Arn'],
        },
      );
    }
  });

  it.each(USERS)(
    "the %s user's secret refuses every function role but its own functions' (%s), in its resource policy",
    (user, readers) => {
      const policies = Object.values(resources(template, 'AWS::SecretsManager::ResourcePolicy')).filter(
        (p) => JSON.stringify(p.Properties!.SecretId) === JSON.stringify({ Ref: secretId(user) }),
      );
      expect(policies).toHaveLength(1);
      const policy = policies[0].Properties!;
      const statements = (policy.ResourcePolicy as { Statement: Record<string, unknown>[] }).Statement;
      expect(statements).toEqual([
        {
          Sid: 'OnlyItsFunctions',
          Effect: 'Deny',
          Principal: { AWS: '*' },
          Action: 'secretsmanager:GetSecretValue',
          Resource: '*',
          Condition: {
            Null: { 'aws:PrincipalTag/SigningPipelineFunction': 'false' },
            ArnNotEquals: {
              'aws:PrincipalArn': readers.map((name) => ({ 'Fn::GetAtt': [roleId(name), 'Arn'] })),
            },
          },
        },
      ]);
      // Every function role carries the tag the condition matches.
      for (const name of ['Api', 'Signer', 'Ca', 'Ocsp', 'Tsa', 'Revoke', 'AuditCheckpoint']) {
        expect(resources(template, 'AWS::IAM::Role')[roleId(name)].Properties!.Tags).toContainEqual({
          Key: 'SigningPipelineFunction',
          Value: expect.any(String),
        });
      }
    },
  );

  it('the revocation function logs in as its own crypto user (no CA key), whose secret no other function reads', () => {
    const fnId = logicalId(template, 'AWS::Lambda::Function', 'Functions/Revoke/Resource');
    const fn = resources(template, 'AWS::Lambda::Function')[fnId].Properties! as {
      Environment: { Variables: Record<string, unknown> };
      Layers?: unknown[];
      VpcConfig: { SecurityGroupIds: unknown[] };
    };
    const revokeSecret = secretId('Revoke');
    // Its login: its own secret, the CloudHSM module and layer, the HSM client group (the ports to the HSM).
    expect(fn.Environment.Variables).toMatchObject({
      HSM_PROFILE: 'cloudhsm',
      HSM_PIN_SOURCE: { 'Fn::Join': ['', ['secretsmanager:', { Ref: revokeSecret }]] },
    });
    expect(fn.Environment.Variables.CA_HSM_PIN_SOURCE).toBeUndefined();
    expect(fn.Layers).toEqual([
      { Ref: logicalId(template, 'AWS::Lambda::LayerVersion', 'CloudHsmLayer/Layer/Resource') },
    ]);
    expect(fn.VpcConfig.SecurityGroupIds).toEqual([
      {
        'Fn::GetAtt': [
          logicalId(template, 'AWS::EC2::SecurityGroup', 'HsmAccess/ClientSecurityGroup/Resource'),
          'GroupId',
        ],
      },
    ]);
    // It reads its own secret and no other crypto user's; no other function reads its secret.
    const reads = (name: string, user: string): string[] =>
      statementsOn(name, secretId(user)).flatMap((s) => s.actions);
    expect(reads('Revoke', 'Revoke')).toEqual(
      expect.arrayContaining(['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret']),
    );
    for (const user of ['Pool', 'Ca', 'Ocsp', 'Tsa']) expect(reads('Revoke', user)).toEqual([]);
    for (const name of [
      'Api',
      'Signer',
      'Keygen',
      'Ca',
      'Crl',
      'Ocsp',
      'Tsa',
      'AuditCheckpoint',
      'Reconcile',
    ])
      expect(reads(name, 'Revoke')).toEqual([]);
    // The secret names the revocation function's crypto user (context revokeCryptoUser).
    const secret = resources(template, 'AWS::SecretsManager::Secret')[revokeSecret].Properties! as {
      GenerateSecretString: { SecretStringTemplate: string };
    };
    expect(JSON.parse(secret.GenerateSecretString.SecretStringTemplate)).toEqual({
      username: 'revoke_auditor',
    });
    const named = synthesize({ revokeCryptoUser: 'revocation_audit' }, { bundle: false }).template;
    const namedSecret = resources(named, 'AWS::SecretsManager::Secret')[
      logicalId(named, 'AWS::SecretsManager::Secret', 'HsmAccess/RevokeCryptoUser/Resource')
    ].Properties! as { GenerateSecretString: { SecretStringTemplate: string } };
    expect(JSON.parse(namedSecret.GenerateSecretString.SecretStringTemplate)).toEqual({
      username: 'revocation_audit',
    });
  });

  it("only the crypto users' functions and the CSC function (its own secrets) may decrypt with the secrets key, and only through Secrets Manager", () => {
    const policy = resources(template, 'AWS::KMS::Key')[keyId()].Properties!.KeyPolicy as {
      Statement: { Action: string | string[]; Principal: { AWS: unknown }; Condition?: unknown }[];
    };
    const toRoles = policy.Statement.filter((s) => Array.isArray(s.Principal.AWS));
    expect(toRoles).toHaveLength(1);
    expect(toRoles[0].Action).toBe('kms:Decrypt');
    expect(JSON.stringify(toRoles[0].Condition)).toContain('"kms:ViaService"');
    expect(JSON.stringify(toRoles[0].Condition)).toContain('"secretsmanager."');
    const readers = [...new Set([...USERS.flatMap(([, names]) => names), 'Csc'])].sort();
    expect(toRoles[0].Principal.AWS).toEqual(
      readers.map((name) => ({ 'Fn::GetAtt': [roleId(name), 'Arn'] })),
    );
  });
});

describe('audit anchors and alarms', () => {
  it('the anchors bucket refuses, to everyone, a write without If-None-Match and any delete', () => {
    const bucket = logicalId(template, 'AWS::S3::Bucket', 'AuditAnchors/Bucket/Resource');
    const policy = Object.values(resources(template, 'AWS::S3::BucketPolicy')).find(
      (p) => JSON.stringify(p.Properties!.Bucket) === JSON.stringify({ Ref: bucket }),
    )!;
    const statements = (policy.Properties!.PolicyDocument as { Statement: Record<string, unknown>[] })
      .Statement;
    const objects = { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucket, 'Arn'] }, '/*']] };
    expect(statements).toContainEqual({
      Sid: 'DenyOverwrites',
      Effect: 'Deny',
      Principal: { AWS: '*' },
      Action: 's3:PutObject',
      Resource: objects,
      Condition: { Null: { 's3:if-none-match': 'true' } },
    });
    expect(statements).toContainEqual({
      Sid: 'DenyDeletes',
      Effect: 'Deny',
      Principal: { AWS: '*' },
      Action: ['s3:DeleteObject', 's3:DeleteObjectVersion'],
      Resource: objects,
    });
  });

  it('alarms, to the topic, on any checkpoint round that found heads moved backwards', () => {
    const topic = logicalId(template, 'AWS::SNS::Topic', 'Observability/AlarmTopic/Resource');
    const alarms = Object.values(resources(template, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties!);
    expect(alarms).toContainEqual(
      expect.objectContaining({
        MetricName: 'AuditHeadsRewound',
        Namespace: 'SigningPipeline',
        Dimensions: [{ Name: 'service', Value: 'signing-pipeline' }],
        Statistic: 'Sum',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
        AlarmActions: [{ Ref: topic }],
      }),
    );
  });
});

describe('API keys bound to principals', () => {
  it("the API function knows each client's API key and the one IAM principal that may use it", () => {
    const TAX = 'arn:aws:iam::123456789012:role/tax-agency';
    const bound = synthesize({ apiClients: `tax-agency=${TAX},pension-agency` }, { bundle: false }).template;
    const fn = logicalId(bound, 'AWS::Lambda::Function', 'Functions/Api/Resource');
    const value = (
      resources(bound, 'AWS::Lambda::Function')[fn].Properties!.Environment as {
        Variables: Record<string, unknown>;
      }
    ).Variables.API_KEY_PRINCIPALS;
    const key = (client: string): string =>
      logicalId(bound, 'AWS::ApiGateway::ApiKey', `Api/ApiKey-${client}/Resource`);
    // {"<tax key id>":"<its role>","<pension key id>":""}: a key with no principal serves no one.
    const text = JSON.stringify(value);
    expect(text).toContain(`{"Ref":"${key('tax-agency')}"}`);
    expect(text).toContain(`{"Ref":"${key('pension-agency')}"}`);
    expect(text).toContain(TAX);
    expect(text.indexOf(key('tax-agency'))).toBeLessThan(text.indexOf(TAX));
  });
});
