/**
 * The synthesized SigningPipelineStack (placeholder layer, default settings): every resource the pipeline
 * needs, with the properties that matter, least-privilege roles, and cdk-nag with zero open findings.
 */
import { Stack, Validations } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { VIEWER_IP_FUNCTION } from '../cdk/lib/constructs/public-pki';
import { modelSchema } from '../cdk/lib/openapi-models';
import { CLOUDHSM_MODULE_PATH } from '../cdk/lib/platform';
import { CSC_ERRORS } from '@pipeline/core/csc';
import {
  API_STAGE,
  CSC_BASE_PATH,
  CSC_ROUTES,
  PKI_SOURCE_LIMITS,
  QUEUES,
  ROUTES,
  SCHEDULES,
  SIGNER_EVENT_SOURCE,
  SIGNER_TIMEOUT_SECONDS,
  TABLES,
  type TableDefinition,
} from '@pipeline/resources';
import {
  actionsOf,
  logicalId,
  resources,
  roleStatements,
  synthesize,
  type Synthesized,
} from './support/synth';

let synth: Synthesized;
let template: Template;
const FUNCTIONS = [
  'Api',
  'Signer',
  'Keygen',
  'Ca',
  'Revoke',
  'Reconcile',
  'JwksRefresh',
  'Crl',
  'Ocsp',
  'Tsa',
  'AuditCheckpoint',
  'Csc',
] as const;
type FunctionName = (typeof FUNCTIONS)[number];
const fnId = (name: FunctionName): string =>
  logicalId(template, 'AWS::Lambda::Function', `Functions/${name}/Resource`);
const roleId = (name: FunctionName): string =>
  logicalId(template, 'AWS::IAM::Role', `Functions/${name}Role/Resource`);
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- synthesized CloudFormation JSON is untyped
const fnProps = (name: FunctionName): Record<string, any> =>
  resources(template, 'AWS::Lambda::Function')[fnId(name)].Properties!;
const env = (name: FunctionName): Record<string, unknown> => fnProps(name).Environment.Variables;

beforeAll(() => {
  synth = synthesize();
  template = synth.template;
}, 240_000);

describe('tables (from TABLES)', () => {
  const tableKeyId = (): string => logicalId(template, 'AWS::KMS::Key', 'Tables/Key/Resource');

  it('creates exactly one table per definition', () => {
    expect(Object.keys(resources(template, 'AWS::DynamoDB::Table'))).toHaveLength(Object.keys(TABLES).length);
  });

  it.each(Object.entries(TABLES) as [string, TableDefinition][])(
    '%s: keys, on-demand, PITR, customer-managed key, TTL, retained',
    (_name, definition) => {
      const id = logicalId(template, 'AWS::DynamoDB::Table', `Tables/${definition.id}/Resource`);
      const table = resources(template, 'AWS::DynamoDB::Table')[id];
      expect(table.DeletionPolicy).toBe('RetainExceptOnCreate');
      expect(table.UpdateReplacePolicy).toBe('Retain');
      const props = table.Properties!;
      expect(props.BillingMode).toBe('PAY_PER_REQUEST');
      expect(props.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(props.DeletionProtectionEnabled).toBe(true);
      expect(props.SSESpecification).toEqual({
        SSEEnabled: true,
        SSEType: 'KMS',
        KMSMasterKeyId: { 'Fn::GetAtt': [tableKeyId(), 'Arn'] },
      });
      const keySchema = [
        { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
        ...(definition.sortKey ? [{ AttributeName: definition.sortKey.name, KeyType: 'RANGE' }] : []),
      ];
      expect(props.KeySchema).toEqual(keySchema);
      for (const a of [definition.partitionKey, definition.sortKey].filter(Boolean)) {
        expect(props.AttributeDefinitions).toContainEqual({ AttributeName: a!.name, AttributeType: a!.type });
      }
      expect(props.GlobalSecondaryIndexes ?? []).toEqual(
        (definition.globalSecondaryIndexes ?? []).map((index) => ({
          IndexName: index.indexName,
          KeySchema: [
            { AttributeName: index.partitionKey.name, KeyType: 'HASH' },
            ...(index.sortKey ? [{ AttributeName: index.sortKey.name, KeyType: 'RANGE' }] : []),
          ],
          Projection: { ProjectionType: index.projection ?? 'ALL' },
        })),
      );
      if (definition.ttlAttribute) {
        expect(props.TimeToLiveSpecification).toEqual({
          AttributeName: definition.ttlAttribute,
          Enabled: true,
        });
      } else {
        expect(props.TimeToLiveSpecification).toBeUndefined();
      }
      // Whichever function carries the table's variable gets this table's name.
      for (const name of FUNCTIONS.filter((n) => env(n)[definition.envVar] !== undefined)) {
        expect(env(name)[definition.envVar]).toEqual({ Ref: id });
      }
    },
  );

  it('rotates the tables key and keeps it', () => {
    const key = resources(template, 'AWS::KMS::Key')[tableKeyId()];
    expect(key.Properties!.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('RetainExceptOnCreate');
  });
});

describe('sign queue (from QUEUES)', () => {
  const definition = QUEUES.signRequests;
  const queueId = (): string => logicalId(template, 'AWS::SQS::Queue', `SignQueue/${definition.id}/Resource`);
  const dlqId = (): string =>
    logicalId(template, 'AWS::SQS::Queue', `SignQueue/${definition.deadLetter.id}/Resource`);

  it('wires the dead-letter queue with maxReceiveCount and encrypts both with the queue key', () => {
    const keyArn = { 'Fn::GetAtt': [logicalId(template, 'AWS::KMS::Key', 'SignQueue/Key/Resource'), 'Arn'] };
    const queues = resources(template, 'AWS::SQS::Queue');
    expect(queues[queueId()].Properties!.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [dlqId(), 'Arn'] },
      maxReceiveCount: definition.maxReceiveCount,
    });
    expect(queues[queueId()].Properties!.KmsMasterKeyId).toEqual(keyArn);
    expect(queues[dlqId()].Properties!.KmsMasterKeyId).toEqual(keyArn);
  });

  it('has a visibility timeout of at least six signer timeouts, and the signer has that timeout', () => {
    const visibility = resources(template, 'AWS::SQS::Queue')[queueId()].Properties!.VisibilityTimeout;
    expect(visibility).toBe(definition.visibilityTimeoutSeconds);
    expect(visibility).toBeGreaterThanOrEqual(6 * SIGNER_TIMEOUT_SECONDS);
    expect(fnProps('Signer').Timeout).toBe(SIGNER_TIMEOUT_SECONDS);
  });

  it('denies non-TLS access to both queues', () => {
    for (const id of [queueId(), dlqId()]) {
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: id }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      });
    }
  });

  it('feeds the signer alias with the SIGNER_EVENT_SOURCE settings', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [queueId(), 'Arn'] },
      BatchSize: SIGNER_EVENT_SOURCE.batchSize,
      ScalingConfig: { MaximumConcurrency: SIGNER_EVENT_SOURCE.maxConcurrency },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    // The alias (provisioned concurrency), not $LATEST: <signer ARN>:live.
    const mapping = Object.values(resources(template, 'AWS::Lambda::EventSourceMapping'))[0];
    const target = JSON.stringify(mapping.Properties!.FunctionName);
    expect(target).toContain(
      `"${logicalId(template, 'AWS::Lambda::Alias', 'Functions/SignerLive/Resource')}"`,
    );
    expect(target).toContain(':live');
  });

  it('lets the signer hold a message until a live lease ends: the queue URL and ChangeMessageVisibility on it', () => {
    expect(env('Signer').SIGN_QUEUE_URL).toEqual({ Ref: queueId() });
    const actions = roleStatements(template, roleId('Signer'))
      .filter((s) => JSON.stringify(s.Resource).includes(`"${queueId()}"`))
      .flatMap(actionsOf);
    expect(actions).toContain('sqs:ChangeMessageVisibility');
  });
});

describe('functions', () => {
  it.each(FUNCTIONS)(
    '%s: Node.js 24, x86_64, the CloudHSM layer where the HSM is used, in the VPC, Powertools settings',
    (name) => {
      const props = fnProps(name);
      expect(props.Runtime).toBe('nodejs24.x');
      expect(props.Architectures).toEqual(['x86_64']);
      // The API, the reconciler, the refresher and the CSC API never touch the HSM: no layer, no PKCS#11.
      expect(props.Layers ?? []).toEqual(
        name === 'Api' || name === 'Reconcile' || name === 'JwksRefresh' || name === 'Csc'
          ? []
          : [{ Ref: logicalId(template, 'AWS::Lambda::LayerVersion', 'CloudHsmLayer/Layer/Resource') }],
      );
      // Only the refresher and the CSC API run outside the VPC: they reach the identity providers on the
      // internet (keys; the CSC API's code exchange), which the isolated subnets cannot.
      if (name === 'JwksRefresh' || name === 'Csc') expect(props.VpcConfig).toBeUndefined();
      else expect(props.VpcConfig.SubnetIds.length).toBeGreaterThan(0);
      expect(props.Environment.Variables).toMatchObject({
        POWERTOOLS_SERVICE_NAME: 'signing-pipeline',
        POWERTOOLS_METRICS_NAMESPACE: 'SigningPipeline',
      });
      expect(props.Role).toEqual({ 'Fn::GetAtt': [roleId(name), 'Arn'] });
    },
  );

  it('points the HSM users at the CloudHSM module and their own crypto user secret', () => {
    const pool = logicalId(template, 'AWS::SecretsManager::Secret', 'HsmAccess/PoolCryptoUser/Resource');
    const ca = logicalId(template, 'AWS::SecretsManager::Secret', 'HsmAccess/CaCryptoUser/Resource');
    const pin = (secret: string): unknown => ({ 'Fn::Join': ['', ['secretsmanager:', { Ref: secret }]] });
    for (const name of ['Signer', 'Keygen', 'Ca'] as const) {
      expect(env(name)).toMatchObject({ HSM_PROFILE: 'cloudhsm', HSM_MODULE_PATH: CLOUDHSM_MODULE_PATH });
    }
    expect(env('Signer').HSM_PIN_SOURCE).toEqual(pin(pool));
    expect(env('Keygen').HSM_PIN_SOURCE).toEqual(pin(pool));
    expect(env('Ca').HSM_PIN_SOURCE).toEqual(pin(ca));
    expect(env('Ca').CA_HSM_PIN_SOURCE).toEqual(pin(ca));
    expect(env('Api').HSM_PIN_SOURCE).toBeUndefined();
    expect(env('Ca').CA_CERTS_SOURCE).toBe('ssm:/signing-pipeline/ca');
    expect(env('Signer').CA_FUNCTION_NAME).toEqual({ 'Fn::GetAtt': [fnId('Ca'), 'Arn'] });
  });

  it('gives the signer alias provisioned concurrency', () => {
    template.hasResourceProperties('AWS::Lambda::Alias', {
      FunctionName: { Ref: fnId('Signer') },
      Name: 'live',
      ProvisionedConcurrencyConfig: { ProvisionedConcurrentExecutions: 2 },
    });
  });

  it.each([
    ['Keygen', SCHEDULES.keygen],
    ['Reconcile', SCHEDULES.reconcile],
    ['JwksRefresh', SCHEDULES.jwksRefresh],
    ['Crl', SCHEDULES.crl],
  ] as const)(
    '%s runs on its SCHEDULES rate and timeout, one at a time, stale runs dropped',
    (name, schedule) => {
      expect(fnProps(name).Timeout).toBe(schedule.timeoutSeconds);
      expect(fnProps(name).ReservedConcurrentExecutions).toBe(schedule.reservedConcurrency);
      template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: `rate(${schedule.rateMinutes} minutes)`,
        State: 'ENABLED',
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [fnId(name), 'Arn'] } })],
      });
      template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: fnId(name) },
        MaximumRetryAttempts: 0,
      });
    },
  );

  it('keygen fills to the configured targets; the reconciler gets only the requests table, the queue and the revocation function', () => {
    expect(env('Keygen').POOL_TARGETS).toBe('RSA-2048=200,EC-P256=100,EC-P384=50');
    expect(env('Reconcile').HSM_PIN_SOURCE).toBeUndefined();
    expect(Object.keys(env('Reconcile')).sort()).toEqual(
      [
        'LOG_LEVEL',
        'NODE_OPTIONS',
        'POWERTOOLS_METRICS_NAMESPACE',
        'POWERTOOLS_SERVICE_NAME',
        TABLES.requests.envVar,
        'SIGN_QUEUE_URL',
        'REVOKE_FUNCTION_NAME',
      ].sort(),
    );
  });
});

describe('least privilege', () => {
  const secretId = (which: 'Pool' | 'Ca'): string =>
    logicalId(template, 'AWS::SecretsManager::Secret', `HsmAccess/${which}CryptoUser/Resource`);
  const references = (name: FunctionName, id: string): boolean =>
    JSON.stringify(roleStatements(template, roleId(name))).includes(`"${id}"`);
  const tableId = (key: keyof typeof TABLES): string =>
    logicalId(template, 'AWS::DynamoDB::Table', `Tables/${TABLES[key].id}/Resource`);
  const actionsOn = (name: FunctionName, id: string): string[] =>
    roleStatements(template, roleId(name))
      .filter((s) => JSON.stringify(s.Resource).includes(`"${id}"`))
      .flatMap(actionsOf)
      .sort();

  it('the CSC function: its OAuth items of the csc table, the API intake of POST /sign-requests, the TSA and revocation functions only as invoke, no HSM secret', () => {
    const statements = roleStatements(template, roleId('Csc'));
    const onTable = (key: keyof typeof TABLES): Record<string, unknown>[] =>
      statements.filter((st) => JSON.stringify(st.Resource).includes(`"${tableId(key)}"`));
    expect(onTable('csc')).toEqual([
      expect.objectContaining({
        Action: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        Condition: {
          'ForAllValues:StringLike': {
            'dynamodb:LeadingKeys': ['FLOW#*', 'CODE#*', 'TOKEN#*', 'PAR#*', 'RESP#*'],
          },
        },
      }),
    ]);
    expect(actionsOn('Csc', tableId('requests'))).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
    ]);
    expect(actionsOn('Csc', tableId('keyPool'))).toEqual(['dynamodb:BatchGetItem']);
    expect(actionsOn('Csc', tableId('demand'))).toEqual(['dynamodb:UpdateItem']);
    expect(actionsOn('Csc', tableId('assertions'))).toEqual(['dynamodb:PutItem']);
    for (const key of ['certificates', 'audit'] as const) expect(actionsOn('Csc', tableId(key))).toEqual([]);
    const queue = logicalId(template, 'AWS::SQS::Queue', `SignQueue/${QUEUES.signRequests.id}/Resource`);
    expect(actionsOn('Csc', queue)).toEqual(['sqs:SendMessage']);
    // It runs the API's intake in its own process: no execute-api; it invokes the TSA function
    // (signatures/timestamp) and the revocation function (the intake registers each request id's owner).
    const invokes = statements.filter((st) => JSON.stringify(st.Action).includes('lambda:'));
    expect(invokes.flatMap(actionsOf)).toEqual(['lambda:InvokeFunction']);
    const invoked = JSON.stringify(invokes.map((st) => st.Resource));
    expect(
      Object.keys(resources(template, 'AWS::Lambda::Function'))
        .filter((id) => invoked.includes(`"${id}"`))
        .sort(),
    ).toEqual([fnId('Revoke'), fnId('Tsa')].sort());
    expect(statements.flatMap(actionsOf).filter((a) => a.startsWith('execute-api:'))).toEqual([]);
    for (const user of ['Pool', 'Ca'] as const) expect(references('Csc', secretId(user))).toBe(false);
  });

  it('the CSC secrets: encrypted with the secrets key, read by the csc function only (its role, and their policies deny every other function)', () => {
    const secretsKey = logicalId(template, 'AWS::KMS::Key', 'HsmAccess/SecretsKey/Resource');
    for (const which of ['IdpClientKey', 'Clients']) {
      const id = logicalId(template, 'AWS::SecretsManager::Secret', `CscSecrets/${which}/Resource`);
      const secret = resources(template, 'AWS::SecretsManager::Secret')[id];
      expect(secret.Properties!.KmsKeyId).toEqual({ 'Fn::GetAtt': [secretsKey, 'Arn'] });
      // Kept when the stack goes: the key is registered at the provider, the clients' hashes are theirs.
      expect(secret.DeletionPolicy).toBe('RetainExceptOnCreate');
      // No value in the template but an empty client list; the key a random placeholder, not a JWK.
      expect(secret.Properties!.SecretString ?? '[]').toBe('[]');
      expect(FUNCTIONS.filter((name) => references(name, id))).toEqual(['Csc']);
      expect(actionsOn('Csc', id)).toEqual([
        'secretsmanager:DescribeSecret',
        'secretsmanager:GetSecretValue',
      ]);
      const policy = Object.values(resources(template, 'AWS::SecretsManager::ResourcePolicy')).find(
        (p) => JSON.stringify(p.Properties!.SecretId) === JSON.stringify({ Ref: id }),
      )!;
      expect(policy.Properties!.ResourcePolicy).toMatchObject({
        Statement: [
          expect.objectContaining({
            Effect: 'Deny',
            Action: 'secretsmanager:GetSecretValue',
            Condition: expect.objectContaining({
              ArnNotEquals: { 'aws:PrincipalArn': [{ 'Fn::GetAtt': [roleId('Csc'), 'Arn'] }] },
            }),
          }),
        ],
      });
    }
    // The function names the secrets, never their values; the clients' start empty, the key is generated.
    const vars = env('Csc');
    for (const name of ['CSC_IDP_CLIENT_KEY', 'CSC_CLIENTS'])
      expect(JSON.stringify(vars[name])).toMatch(
        /^\{"Fn::Join":\["",\["secretsmanager:",\{"Ref":"CscSecrets/,
      );
  });

  it('the signing path cannot read the CA user secret', () => {
    expect(references('Ca', secretId('Ca'))).toBe(true);
    for (const name of ['Api', 'Signer', 'Keygen', 'Reconcile', 'JwksRefresh'] as const)
      expect(references(name, secretId('Ca'))).toBe(false);
  });

  it("only signer, keygen and the audit checkpointer (the audit key is the pool user's) read the pool user secret", () => {
    expect(FUNCTIONS.filter((name) => references(name, secretId('Pool'))).sort()).toEqual([
      'AuditCheckpoint',
      'Keygen',
      'Signer',
    ]);
  });

  it("the identity providers' keys: the API and the CA read their parameter, only the refresher writes it; the refresher reaches no table", () => {
    const parameter = logicalId(template, 'AWS::SSM::Parameter', 'IdentityTrust/Jwks0/Resource');
    for (const name of ['Api', 'Ca'] as const) {
      expect(actionsOn(name, parameter)).not.toContain('ssm:PutParameter');
      expect(actionsOn(name, parameter)).toContain('ssm:GetParameter');
    }
    expect(actionsOn('JwksRefresh', parameter)).toEqual(
      expect.arrayContaining(['ssm:GetParameter', 'ssm:PutParameter']),
    );
    for (const name of ['Signer', 'Keygen', 'Revoke', 'Reconcile'] as const)
      expect(actionsOn(name, parameter)).toEqual([]);
    // The CA verifies the evidence itself: it trusts the same issuers as the API.
    expect(env('Ca').IDENTITY_TRUSTED_ISSUERS).toEqual(env('Api').IDENTITY_TRUSTED_ISSUERS);
    for (const key of Object.keys(TABLES) as (keyof typeof TABLES)[])
      expect(actionsOn('JwksRefresh', tableId(key))).toEqual([]);
    expect(actionsOn('Api', tableId('assertions'))).toEqual(['dynamodb:PutItem']);
    expect(JSON.parse(env('Api').IDENTITY_TRUSTED_ISSUERS as string)).toEqual([
      { issuer: 'https://idp.placeholder.invalid', jwks: 'ssm:/signing-pipeline/identity/jwks/0' },
    ]);
  });

  it('the reconciler lists, reads and updates requests and sends messages; nothing else', () => {
    expect(actionsOn('Reconcile', tableId('requests'))).toEqual([
      'dynamodb:GetItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    for (const key of ['keyPool', 'certificates', 'demand', 'audit'] as const)
      expect(actionsOn('Reconcile', tableId(key))).toEqual([]);
    const queueId = logicalId(template, 'AWS::SQS::Queue', `SignQueue/${QUEUES.signRequests.id}/Resource`);
    expect(actionsOn('Reconcile', queueId)).toEqual(['sqs:SendMessage']);
  });

  it('the internet-facing OCSP function reads SERIAL# items only (never a REQ# record), and its concurrency is reserved', () => {
    const onCertificates = roleStatements(template, roleId('Ocsp')).filter((s) =>
      JSON.stringify(s.Resource).includes(`"${tableId('certificates')}"`),
    );
    expect(onCertificates.flatMap(actionsOf)).toEqual(['dynamodb:BatchGetItem']);
    for (const statement of onCertificates) {
      expect(statement.Condition).toEqual({
        'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['SERIAL#*'] },
      });
    }
    // Reserved (and capped): a flood neither starves the signer nor opens unbounded HSM sessions.
    expect(fnProps('Ocsp').ReservedConcurrentExecutions).toBe(20);
  });

  it('the API reads pool counters only: no query, no writes on the pool table', () => {
    expect(actionsOn('Api', tableId('keyPool'))).toEqual(['dynamodb:BatchGetItem']);
  });

  it('the signer claims keys but cannot add them; only keygen writes new pool items', () => {
    const signer = actionsOn('Signer', tableId('keyPool'));
    expect(signer).toEqual(['dynamodb:DeleteItem', 'dynamodb:Query', 'dynamodb:UpdateItem']);
    expect(actionsOn('Keygen', tableId('keyPool'))).toContain('dynamodb:BatchWriteItem');
    expect(actionsOn('Ca', tableId('keyPool'))).toEqual([]);
  });

  /** The statements of a function's role on a table, with their conditions. */
  const statementsOn = (name: FunctionName, id: string) =>
    roleStatements(template, roleId(name)).filter((s) => JSON.stringify(s.Resource).includes(`"${id}"`));

  it('only the CA issues (puts certificates, reads no request) and only the revocation function revokes; the signer may only issue, the API only revoke', () => {
    for (const name of ['Api', 'Signer', 'Keygen', 'Reconcile', 'JwksRefresh'] as const)
      expect(actionsOn(name, tableId('certificates'))).toEqual([]);
    expect(actionsOn('Ca', tableId('certificates'))).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:ConditionCheckItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
    ]);
    expect(actionsOn('Ca', tableId('requests'))).toEqual([]);
    expect(actionsOn('Revoke', tableId('certificates'))).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
    ]);
    const onKeys = (name: FunctionName, action: string): unknown =>
      statementsOn(name, tableId('certificates')).find((s) => actionsOf(s).includes(action))?.Condition;
    const leading = (keys: string[]) => ({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': keys } });
    // The CA puts its own item kinds only (a certificate, released as issued, and its registers).
    expect(onKeys('Ca', 'dynamodb:PutItem')).toEqual(
      leading(['REQ#*', 'SERIAL#*', 'ASSERTION#*', 'PUBKEY#*']),
    );
    // Its updates: the revocation of a serial a takeover's replacement supersedes, and a one-time
    // credential's release (on its REQ#, checking its SERIAL#).
    expect(onKeys('Ca', 'dynamodb:UpdateItem')).toEqual(leading(['SERIAL#*', 'REQ#*']));
    expect(onKeys('Ca', 'dynamodb:ConditionCheckItem')).toEqual(leading(['SERIAL#*']));
    // The revocation function revokes serials, reads a request's certificate and owner, puts owners only.
    expect(onKeys('Revoke', 'dynamodb:UpdateItem')).toEqual(leading(['SERIAL#*']));
    expect(onKeys('Revoke', 'dynamodb:BatchGetItem')).toEqual(leading(['SERIAL#*', 'REQ#*', 'OWNER#*']));
    expect(onKeys('Revoke', 'dynamodb:PutItem')).toEqual(leading(['OWNER#*']));
    // The publication counts CRL numbers (only CRL# items) and reads the revoked index; OCSP only reads.
    expect(onKeys('Crl', 'dynamodb:UpdateItem')).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['CRL#*'] },
    });
    expect(actionsOn('Ocsp', tableId('certificates'))).toEqual(['dynamodb:BatchGetItem']);
    const invokers = FUNCTIONS.filter((name) =>
      roleStatements(template, roleId(name)).some((s) => actionsOf(s).includes('lambda:InvokeFunction')),
    );
    expect(invokers.sort()).toEqual(['Api', 'Csc', 'Reconcile', 'Revoke', 'Signer']);
    // The reconciler revokes unused one-time credentials through the revocation function, issues nothing.
    expect(actionsOn('Reconcile', fnId('Revoke'))).toEqual(['lambda:InvokeFunction']);
    expect(actionsOn('Reconcile', fnId('Ca'))).toEqual([]);
    expect(actionsOn('Csc', fnId('Tsa'))).toEqual(['lambda:InvokeFunction']);
    expect(actionsOn('Csc', fnId('Ca'))).toEqual([]);
    expect(actionsOn('Signer', fnId('Ca'))).toEqual(['lambda:InvokeFunction']);
    expect(actionsOn('Signer', fnId('Revoke'))).toEqual([]);
    expect(actionsOn('Api', fnId('Revoke'))).toEqual(['lambda:InvokeFunction']);
    expect(actionsOn('Api', fnId('Ca'))).toEqual([]);
    expect(actionsOn('Revoke', fnId('Crl'))).toEqual(['lambda:InvokeFunction']);
    expect(actionsOn('Ca', fnId('Crl'))).toEqual([]);
  });

  it('the CA keys are used only by the CA and CRL functions (the CA crypto user), the OCSP key only by OCSP', () => {
    const caSecret = logicalId(template, 'AWS::SecretsManager::Secret', 'HsmAccess/CaCryptoUser/Resource');
    expect(FUNCTIONS.filter((name) => references(name, caSecret)).sort()).toEqual(['Ca', 'Crl']);
    const ocspSecret = logicalId(
      template,
      'AWS::SecretsManager::Secret',
      'HsmAccess/OcspCryptoUser/Resource',
    );
    expect(FUNCTIONS.filter((name) => references(name, ocspSecret))).toEqual(['Ocsp']);
    const tsaSecret = logicalId(template, 'AWS::SecretsManager::Secret', 'HsmAccess/TsaCryptoUser/Resource');
    expect(FUNCTIONS.filter((name) => references(name, tsaSecret))).toEqual(['Tsa']);
  });

  it('the audit log is append-only for every function: no update, delete or scan; the API has no access', () => {
    for (const name of ['Signer', 'Keygen', 'Revoke', 'Crl'] as const)
      expect(actionsOn(name, tableId('audit'))).toEqual(['dynamodb:GetItem', 'dynamodb:PutItem']);
    // The CA also reads chains back (CHAIN# items only): a takeover's evidence.
    expect(actionsOn('Ca', tableId('audit'))).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
    ]);
    // The checkpointer reads every chain head at once.
    expect(actionsOn('AuditCheckpoint', tableId('audit'))).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
    ]);
    expect(actionsOn('Api', tableId('audit'))).toEqual([]);
    expect(actionsOn('Reconcile', tableId('audit'))).toEqual([]);
  });

  it('audit checkpoints are anchored in an Object Lock (compliance) bucket only the checkpointer writes, never deletes', () => {
    const bucket = logicalId(template, 'AWS::S3::Bucket', 'AuditAnchors/Bucket/Resource');
    const props = resources(template, 'AWS::S3::Bucket')[bucket].Properties!;
    expect(props.ObjectLockEnabled).toBe(true);
    expect(props.ObjectLockConfiguration).toEqual({
      ObjectLockEnabled: 'Enabled',
      Rule: { DefaultRetention: { Mode: 'COMPLIANCE', Days: 3653 } },
    });
    expect(props.VersioningConfiguration).toEqual({ Status: 'Enabled' });
    expect(resources(template, 'AWS::S3::Bucket')[bucket].DeletionPolicy).toBe('RetainExceptOnCreate');
    const writers = FUNCTIONS.filter((name) => actionsOn(name, bucket).length > 0);
    expect(writers).toEqual(['AuditCheckpoint']);
    // ListBucket: a missing anchor reads as 404, not 403 (deploy-settings.test.ts).
    expect(actionsOn('AuditCheckpoint', bucket)).toEqual(['s3:GetObject', 's3:ListBucket', 's3:PutObject']);
    expect(env('AuditCheckpoint').AUDIT_ANCHOR_TARGET).toEqual({
      'Fn::Join': ['', ['s3:', { Ref: bucket }]],
    });
  });

  it('no statement grants a service-wide or global wildcard action', () => {
    for (const name of FUNCTIONS) {
      for (const action of roleStatements(template, roleId(name)).flatMap(actionsOf)) {
        expect(action).not.toMatch(/(^\*$|:\*$)/);
      }
    }
  });
});

describe('tracing', () => {
  it('traces every function actively (X-Ray)', () => {
    // The pipeline's functions (CDK's own custom-resource helpers are not ours to trace).
    const functions = Object.entries(resources(template, 'AWS::Lambda::Function')).filter(([id]) =>
      id.startsWith('Functions'),
    );
    expect(functions.length).toBe(FUNCTIONS.length);
    for (const [id, fn] of functions)
      expect([id, fn.Properties!.TracingConfig]).toEqual([id, { Mode: 'Active' }]);
  });
});

describe('network and HSM access', () => {
  it('has isolated subnets only, no NAT, and the endpoints the functions need', () => {
    template.resourceCountIs('AWS::EC2::NatGateway', 0);
    template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    const services = Object.values(resources(template, 'AWS::EC2::VPCEndpoint')).map((e) =>
      JSON.stringify(e.Properties!.ServiceName),
    );
    for (const service of [
      'dynamodb',
      'sqs',
      'lambda',
      'secretsmanager',
      'ssm',
      'logs',
      'monitoring',
      'xray',
    ]) {
      expect(services.some((s) => s.includes(`.${service}"`))).toBe(true);
    }
    template.resourceCountIs('AWS::EC2::FlowLog', 1);
  });

  it('opens the cluster ports 2223-2225 from the HSM client group, and nothing else towards the cluster', () => {
    const client = logicalId(template, 'AWS::EC2::SecurityGroup', 'HsmAccess/ClientSecurityGroup/Resource');
    const cluster = 'sg-00000000000000000';
    template.hasResourceProperties('AWS::EC2::SecurityGroupEgress', {
      GroupId: { 'Fn::GetAtt': [client, 'GroupId'] },
      DestinationSecurityGroupId: cluster,
      IpProtocol: 'tcp',
      FromPort: 2223,
      ToPort: 2225,
    });
    const ingress = Object.values(resources(template, 'AWS::EC2::SecurityGroupIngress')).filter(
      (r) => r.Properties!.GroupId === cluster,
    );
    expect(ingress.map((r) => r.Properties)).toEqual([
      expect.objectContaining({
        SourceSecurityGroupId: { 'Fn::GetAtt': [client, 'GroupId'] },
        FromPort: 2223,
        ToPort: 2225,
      }),
    ]);
    const api = logicalId(template, 'AWS::EC2::SecurityGroup', 'Functions/ApiSecurityGroup/Resource');
    expect(JSON.stringify(resources(template, 'AWS::EC2::SecurityGroup')[api])).not.toContain('2223');
  });

  it('generates the five crypto user passwords (no secret value in the template) and keeps them', () => {
    const secrets = Object.fromEntries(
      Object.entries(resources(template, 'AWS::SecretsManager::Secret')).filter(([id]) =>
        id.startsWith('HsmAccess'),
      ),
    );
    expect(Object.keys(secrets)).toHaveLength(5);
    for (const secret of Object.values(secrets)) {
      expect(secret.Properties!.GenerateSecretString).toMatchObject({
        GenerateStringKey: 'password',
        PasswordLength: 32,
      });
      expect(secret.Properties!.SecretString).toBeUndefined();
      expect(secret.DeletionPolicy).toBe('RetainExceptOnCreate');
    }
  });

  it('creates the CA certificate parameters the CA function reads, retained', () => {
    for (const name of ['root', 'issuing']) {
      template.hasResource('AWS::SSM::Parameter', {
        Properties: Match.objectLike({ Name: `/signing-pipeline/ca/${name}.pem`, Type: 'String' }),
        DeletionPolicy: 'RetainExceptOnCreate',
      });
    }
  });

  it('refuses deployment of a placeholder-layer template with a rule that can never hold', () => {
    const parameter = template.toJSON().Parameters.PlaceholderLayerInUse;
    expect(parameter).toMatchObject({ Default: 'true', AllowedValues: ['true'] });
    expect(template.toJSON().Rules.RefusePlaceholderLayer).toEqual({
      Assertions: [
        {
          Assert: { 'Fn::Equals': [{ Ref: 'PlaceholderLayerInUse' }, 'false'] },
          AssertDescription: expect.stringContaining('layers/cloudhsm/build.sh'),
        },
      ],
    });
  });
});

const signingApiLogicalId = (): string =>
  logicalId(template, 'AWS::ApiGateway::RestApi', '/Api/RestApi/Resource');
const cscApiLogicalId = (): string =>
  logicalId(template, 'AWS::ApiGateway::RestApi', 'CscApi/RestApi/Resource');

describe('API', () => {
  /** Full resource path (without stage) of every API Gateway resource, from PathPart/ParentId chains. */
  function resourcePaths(): Map<string, string> {
    const all = resources(template, 'AWS::ApiGateway::Resource');
    const path = (id: string): string => {
      const r = all[id].Properties!;
      const parent = (r.ParentId as { Ref?: string }).Ref;
      return `${parent ? path(parent) : ''}/${r.PathPart as string}`;
    };
    return new Map(Object.keys(all).map((id) => [id, path(id)]));
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- synthesized CloudFormation JSON is untyped
  function method(route: (typeof ROUTES)[number]): Record<string, any> {
    const paths = resourcePaths();
    const found = Object.values(resources(template, 'AWS::ApiGateway::Method')).filter((m) => {
      const resourceRef = (m.Properties!.ResourceId as { Ref?: string }).Ref;
      return (
        m.Properties!.HttpMethod === route.method && resourceRef && paths.get(resourceRef) === route.resource
      );
    });
    expect(found).toHaveLength(1);
    return found[0].Properties!;
  }

  const signingApiId = signingApiLogicalId;

  it('has exactly the ROUTES, IAM authorization on the authenticated ones, health open', () => {
    const methods = Object.values(resources(template, 'AWS::ApiGateway::Method')).filter(
      (m) => (m.Properties!.RestApiId as { Ref?: string }).Ref === signingApiId(),
    );
    expect(methods).toHaveLength(ROUTES.length);
    for (const route of ROUTES) {
      expect(method(route).AuthorizationType).toBe(route.authenticated ? 'AWS_IAM' : 'NONE');
    }
    for (const route of ROUTES) expect(method(route).ApiKeyRequired ?? false).toBe(route.authenticated);
  });

  it('validates the sign request body against the OpenAPI model and the id path parameter', () => {
    const post = method(ROUTES.find((r) => r.method === 'POST')!);
    const validator = resources(template, 'AWS::ApiGateway::RequestValidator')[post.RequestValidatorId.Ref];
    expect(validator.Properties).toMatchObject({
      ValidateRequestBody: true,
      ValidateRequestParameters: true,
    });
    const modelId = post.RequestModels['application/json'].Ref;
    const model = resources(template, 'AWS::ApiGateway::Model')[modelId].Properties!;
    const { schema, ...converted } = modelSchema('SignRequestInput');
    expect(model.Schema).toEqual(JSON.parse(JSON.stringify({ $schema: schema, ...converted })));
    expect(model.Schema).toMatchObject({
      $schema: 'http://json-schema.org/draft-04/schema#',
      additionalProperties: false,
      // `digest` and `digestAlgorithm`, or `documents`: the API names the rule broken (VALIDATION_FAILED).
      required: ['requestId', 'identityAssertion'],
      properties: {
        identityAssertion: { type: 'string', maxLength: 8192 },
        documents: { type: 'array', minItems: 1, maxItems: 50 },
      },
    });
    // No field names the signer: a body with one is refused by the gateway already.
    expect(Object.keys((model.Schema as { properties: object }).properties)).not.toContain('signer');
    const get = method(ROUTES.find((r) => r.resource === '/sign-requests/{id}')!);
    expect(get.RequestParameters).toEqual({
      'method.request.path.id': true,
      'method.request.querystring.wait': false,
    });
    expect(
      resources(template, 'AWS::ApiGateway::RequestValidator')[get.RequestValidatorId.Ref].Properties,
    ).toMatchObject({
      ValidateRequestParameters: true,
    });
  });

  it('stage v1: access logs, error-level execution logs without data tracing, the stage throttle on every method', () => {
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: API_STAGE,
      AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('requestId') },
      MethodSettings: Match.arrayWith([
        Match.objectLike({
          HttpMethod: '*',
          ResourcePath: '/*',
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
          ThrottlingRateLimit: 200,
          ThrottlingBurstLimit: 400,
        }),
      ]),
    });
  });

  const cscApiId = cscApiLogicalId;

  it('serves CSC_ROUTES under CSC_BASE_PATH on the csc function, on an API of its own, without IAM or API key (OAuth 2.0 at the function), callback included', () => {
    const cscFn = fnId('Csc');
    for (const route of CSC_ROUTES) {
      const props = method({
        method: route.method,
        resource: `${CSC_BASE_PATH}${route.resource}`,
        authenticated: false,
      });
      expect(props.RestApiId).toEqual({ Ref: cscApiId() });
      expect([props.AuthorizationType, props.ApiKeyRequired ?? false]).toEqual(['NONE', false]);
      expect(JSON.stringify(props.Integration.Uri)).toContain(cscFn);
      expect(props.Integration.Type).toBe('AWS_PROXY');
    }
    expect(CSC_ROUTES.map((r) => `${r.method} ${r.resource}`)).toContain('GET /oauth2/callback');
    // Only the CSC methods reach the csc function; the sign request routes stay on the API function.
    for (const route of ROUTES) expect(JSON.stringify(method(route).Integration.Uri)).not.toContain(cscFn);
  });

  it('throttles each CSC method at its stage (no usage plan covers a method without an API key), logged as the sign request API', () => {
    const stages = Object.values(resources(template, 'AWS::ApiGateway::Stage')).map((r) => r.Properties!);
    const csc = stages.filter((p) => (p.RestApiId as { Ref?: string }).Ref === cscApiId());
    expect(csc).toHaveLength(1);
    expect(csc[0]).toMatchObject({
      StageName: API_STAGE,
      TracingEnabled: true,
      AccessLogSetting: { DestinationArn: expect.anything() },
      MethodSettings: [
        expect.objectContaining({
          HttpMethod: '*',
          ResourcePath: '/*',
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
          ThrottlingRateLimit: 20,
          ThrottlingBurstLimit: 40,
        }),
      ],
    });
  });

  /** The gateway responses of one REST API, by response type. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- synthesized CloudFormation JSON is untyped
  function gatewayResponses(apiId: string): Map<string, Record<string, any>> {
    return new Map(
      Object.values(resources(template, 'AWS::ApiGateway::GatewayResponse'))
        .map((r) => r.Properties!)
        .filter((p) => (p.RestApiId as { Ref?: string }).Ref === apiId)
        .map((p) => [p.ResponseType as string, p]),
    );
  }

  it("answers every response of API Gateway's own on the CSC API in the CSC form, at the CSC error's status", () => {
    const csc = gatewayResponses(cscApiId());
    expect([...csc.keys()].sort()).toEqual([...gatewayResponses(signingApiId()).keys()].sort());
    for (const [type, props] of csc) {
      const body = JSON.parse(props.ResponseTemplates['application/json'] as string) as Record<
        string,
        unknown
      >;
      expect([type, Object.keys(body)]).toEqual([type, ['error', 'error_description']]);
      // The catch-alls keep API Gateway's status (a WAF block stays 403).
      expect([type, props.StatusCode]).toEqual([
        type,
        type.startsWith('DEFAULT_') ? undefined : String(CSC_ERRORS[body.error as keyof typeof CSC_ERRORS]),
      ]);
    }
    const of = (type: string) => ({
      status: csc.get(type)!.StatusCode,
      body: JSON.parse(csc.get(type)!.ResponseTemplates['application/json'] as string) as unknown,
      headers: csc.get(type)!.ResponseParameters as unknown,
    });
    expect(of('THROTTLED')).toEqual({
      status: '429',
      body: { error: 'too_many_requests', error_description: expect.any(String) },
      headers: { 'gatewayresponse.header.Retry-After': "'1'" },
    });
    expect(of('MISSING_AUTHENTICATION_TOKEN')).toMatchObject({
      status: '404',
      body: { error: 'not_found', error_description: 'no such CSC method' },
    });
    expect(of('DEFAULT_4XX').body).toMatchObject({ error: 'invalid_request' });
    expect(of('DEFAULT_5XX').body).toMatchObject({ error: 'server_error' });
    expect(of('INTEGRATION_FAILURE')).toMatchObject({
      status: '503',
      body: { error: 'temporarily_unavailable' },
    });
  });

  it("binds the stage to a usage plan with an API key: each client's throttle below the stage's, and a daily quota", () => {
    template.hasResourceProperties('AWS::ApiGateway::UsagePlan', {
      Throttle: { RateLimit: 50, BurstLimit: 100 },
      Quota: { Limit: 1_000_000, Period: 'DAY' },
      ApiStages: [Match.objectLike({ Stage: Match.anyValue() })],
    });
    template.resourceCountIs('AWS::ApiGateway::ApiKey', 1);
    template.resourceCountIs('AWS::ApiGateway::UsagePlanKey', 1);
  });

  it('answers throttled and over-quota requests with 429 and the error body of the API', () => {
    const responses = gatewayResponses(signingApiId());
    const of = (type: string) => responses.get(type)!;
    expect(of('THROTTLED')).toMatchObject({
      StatusCode: '429',
      ResponseParameters: { 'gatewayresponse.header.Retry-After': "'1'" },
    });
    expect(JSON.parse(of('THROTTLED').ResponseTemplates['application/json'])).toMatchObject({
      error: { code: 'THROTTLED' },
    });
    expect(of('QUOTA_EXCEEDED')).toMatchObject({ StatusCode: '429' });
    expect(JSON.parse(of('QUOTA_EXCEEDED').ResponseTemplates['application/json'])).toMatchObject({
      error: { code: 'QUOTA_EXCEEDED' },
    });
  });
});

describe('observability', () => {
  const topicRef = (): unknown => ({
    Ref: logicalId(template, 'AWS::SNS::Topic', 'Observability/AlarmTopic/Resource'),
  });

  it('alarms on low pool per key type, dead letters, queue age over 3 s, lost requests and function errors, to the topic', () => {
    const alarms = Object.values(resources(template, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties!);
    for (const alarm of alarms) expect(alarm.AlarmActions).toEqual([topicRef()]);
    const pool = alarms.filter((a) => a.MetricName === 'KeysAvailable');
    expect(
      pool.map((a) => [
        (a.Dimensions as { Name: string; Value: string }[]).find((d) => d.Name === 'KeyType')!.Value,
        a.Threshold,
      ]),
    ).toEqual([
      ['RSA-2048', 40],
      ['EC-P256', 20],
      ['EC-P384', 10],
    ]);
    for (const a of pool) {
      expect(a).toMatchObject({
        Namespace: 'SigningPipeline',
        ComparisonOperator: 'LessThanThreshold',
        TreatMissingData: 'breaching',
      });
      expect(a.Dimensions).toContainEqual({ Name: 'service', Value: 'signing-pipeline' });
    }
    expect(alarms).toContainEqual(
      expect.objectContaining({
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      }),
    );
    expect(alarms).toContainEqual(
      expect.objectContaining({ MetricName: 'ApproximateAgeOfOldestMessage', Threshold: 3 }),
    );
    for (const name of ['Signer', 'Keygen', 'Ca', 'Revoke', 'Reconcile'] as const) {
      expect(alarms).toContainEqual(
        expect.objectContaining({
          MetricName: 'Errors',
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnId(name) } }],
        }),
      );
    }
    // 5XX of each API, by its name (the stage metrics' dimension): two APIs, two names.
    const apiNames = [signingApiLogicalId(), cscApiLogicalId()].map(
      (id) => resources(template, 'AWS::ApiGateway::RestApi')[id].Properties!.Name,
    );
    expect(new Set(apiNames).size).toBe(2);
    for (const name of apiNames) {
      expect(alarms).toContainEqual(
        expect.objectContaining({
          MetricName: '5XXError',
          Dimensions: expect.arrayContaining([{ Name: 'ApiName', Value: name }]),
        }),
      );
    }
    expect(alarms).toContainEqual(
      expect.objectContaining({
        MetricName: 'RequestsLost',
        Namespace: 'SigningPipeline',
        Dimensions: [{ Name: 'service', Value: 'signing-pipeline' }],
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      }),
    );
  });

  it('encrypts the alarm topic with a key CloudWatch may use', () => {
    const keyId = logicalId(template, 'AWS::KMS::Key', 'Observability/TopicKey/Resource');
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    expect(JSON.stringify(resources(template, 'AWS::KMS::Key')[keyId].Properties!.KeyPolicy)).toContain(
      'cloudwatch.amazonaws.com',
    );
  });

  it('dashboard shows traffic, latency percentiles, pool depth per key type, keygen, queue age, DLQ, errors', () => {
    const body = JSON.stringify(
      Object.values(resources(template, 'AWS::CloudWatch::Dashboard'))[0].Properties!.DashboardBody,
    );
    for (const needle of [
      'Count',
      'p50',
      'p99',
      'KeysAvailable',
      'KeysAdded',
      'KeysClaimed',
      'OnTheFlyFallbacks',
      'PoolEmptyRejections',
      'ApproximateAgeOfOldestMessage',
      'ApproximateNumberOfMessagesVisible',
      'Errors',
      'RSA-2048',
      'EC-P384',
    ]) {
      expect(body).toContain(needle);
    }
  });
});

describe('cdk-nag (AwsSolutions)', () => {
  it('reports no unacknowledged finding on the stack', () => {
    const report = new AwsSolutionsChecks().validateScope(synth.stack);
    const open = report.violations.map(
      (v) =>
        `${v.ruleName} ${v.violatingResources.map((r) => (r as { constructPath?: string }).constructPath).join(',')}`,
    );
    expect(open).toEqual([]);
  });

  it('is live: the same check flags an unacknowledged finding', () => {
    const stack = new Stack(undefined, 'Probe');
    new Secret(stack, 'Unrotated');
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(report.violations.map((v) => v.ruleName)).toContain('AwsSolutions-SMG4');
    Validations.of(stack).acknowledge({ id: 'AwsSolutions-SMG4', reason: 'probe' });
    expect(new AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
  });

  it('every acknowledgement carries a written reason', () => {
    expect(synth.stack.nagAcknowledgements.length).toBeGreaterThan(0);
    for (const a of synth.stack.nagAcknowledgements) {
      expect(a.id).toMatch(/^AwsSolutions-/);
      expect(a.reason.length).toBeGreaterThanOrEqual(60);
    }
  });
});

describe('public PKI endpoint', () => {
  it('serves CRLs, CA certificates and OCSP over plain HTTP from a private bucket and a public OCSP API', () => {
    const distribution = Object.values(resources(template, 'AWS::CloudFront::Distribution'))[0].Properties!
      .DistributionConfig as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(distribution.DefaultCacheBehavior.ViewerProtocolPolicy).toBe('allow-all');
    const ocsp = distribution.CacheBehaviors.find((b: { PathPattern: string }) => b.PathPattern === '/ocsp*');
    expect(ocsp).toMatchObject({ ViewerProtocolPolicy: 'allow-all' });
    expect(ocsp.AllowedMethods).toEqual(expect.arrayContaining(['GET', 'POST']));
    const bucketId = logicalId(template, 'AWS::S3::Bucket', 'PublicPki/Objects/Resource');
    expect(
      resources(template, 'AWS::S3::Bucket')[bucketId].Properties!.PublicAccessBlockConfiguration,
    ).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    const ocspApi = logicalId(template, 'AWS::ApiGateway::RestApi', 'PublicPki/OcspApi/Resource');
    expect(resources(template, 'AWS::ApiGateway::RestApi')[ocspApi].Properties!.BinaryMediaTypes).toEqual([
      '*/*',
    ]);
    const methods = Object.values(resources(template, 'AWS::ApiGateway::Method')).filter(
      (m) => (m.Properties!.RestApiId as { Ref?: string }).Ref === ocspApi,
    );
    // OCSP GET and POST, the TSA's POST.
    expect(methods.map((m) => m.Properties!.HttpMethod).sort()).toEqual(['GET', 'POST', 'POST']);
    for (const m of methods) expect(m.Properties!.AuthorizationType).toBe('NONE');
  });

  it('a web ACL in front of OCSP and the TSA: through the distribution only, rate-limited per viewer address', () => {
    // The PKI's and the CSC API's (csc-limits.test.ts).
    expect(Object.keys(resources(template, 'AWS::WAFv2::WebACL'))).toHaveLength(2);
    const aclId = logicalId(template, 'AWS::WAFv2::WebACL', 'PublicPki/RateLimits');
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- synthesized CloudFormation JSON is untyped
    const acl = resources(template, 'AWS::WAFv2::WebACL')[aclId].Properties as Record<string, any>;
    expect(acl.Scope).toBe('REGIONAL');
    expect(acl.DefaultAction).toEqual({ Allow: {} });
    const rule = (name: string) => acl.Rules.find((r: { Name: string }) => r.Name === name);
    // Not through the distribution (no origin-verify value of this stack's): refused.
    const only = rule('OnlyThroughTheDistribution');
    expect(only.Action).toEqual({ Block: {} });
    const match = only.Statement.NotStatement.Statement.ByteMatchStatement;
    expect(match.FieldToMatch).toEqual({ SingleHeader: { Name: 'x-pki-origin-verify' } });
    expect(match.PositionalConstraint).toBe('EXACTLY');
    // Per viewer address (the header the distribution sets), per minute; time-stamps apart, lower.
    const perSource = rule('PerSource');
    const timeStamps = rule('TimeStampsPerSource');
    for (const r of [perSource, timeStamps]) {
      expect(r.Priority).toBeGreaterThan(only.Priority);
      expect(r.Action).toEqual({ Block: { CustomResponse: { ResponseCode: 429 } } });
      expect(r.Statement.RateBasedStatement).toMatchObject({
        AggregateKeyType: 'FORWARDED_IP',
        EvaluationWindowSec: 60,
        ForwardedIPConfig: { HeaderName: 'x-pki-viewer-ip', FallbackBehavior: 'MATCH' },
      });
    }
    expect(perSource.Statement.RateBasedStatement.Limit).toBe(PKI_SOURCE_LIMITS.requestsPerMinute);
    expect(timeStamps.Statement.RateBasedStatement.Limit).toBe(PKI_SOURCE_LIMITS.timeStampsPerMinute);
    expect(timeStamps.Statement.RateBasedStatement.ScopeDownStatement.ByteMatchStatement).toMatchObject({
      FieldToMatch: { UriPath: {} },
      PositionalConstraint: 'ENDS_WITH',
      SearchString: '/tsa',
    });
    // Associated with the OCSP API's stage.
    const associations = Object.values(resources(template, 'AWS::WAFv2::WebACLAssociation')).filter((a) =>
      JSON.stringify(a.Properties!.WebACLArn).includes(aclId),
    );
    expect(associations).toHaveLength(1);
    const stageId = logicalId(template, 'AWS::ApiGateway::Stage', 'PublicPki/OcspApi/DeploymentStage');
    expect(JSON.stringify(associations[0].Properties!.ResourceArn)).toContain(stageId);
    const cscAcl = logicalId(template, 'AWS::WAFv2::WebACL', 'CscApi/Limits/WebAcl');
    const cscStage = logicalId(template, 'AWS::ApiGateway::Stage', 'CscApi/RestApi/DeploymentStage');
    const cscAssociation = Object.values(resources(template, 'AWS::WAFv2::WebACLAssociation')).filter((a) =>
      JSON.stringify(a.Properties!.WebACLArn).includes(cscAcl),
    );
    expect(cscAssociation.map((a) => JSON.stringify(a.Properties!.ResourceArn))).toEqual([
      expect.stringContaining(cscStage),
    ]);
    // The distribution sends the same origin-verify value, and sets the viewer's address on both paths.
    const distribution = Object.values(resources(template, 'AWS::CloudFront::Distribution'))[0].Properties!
      .DistributionConfig as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const apiOrigin = distribution.Origins.find(
      (o: { OriginCustomHeaders?: unknown }) => o.OriginCustomHeaders,
    );
    expect(apiOrigin.OriginCustomHeaders).toEqual([
      { HeaderName: 'x-pki-origin-verify', HeaderValue: match.SearchString },
    ]);
    expect(JSON.stringify(match.SearchString)).toContain('AWS::StackId');
    const functionId = logicalId(template, 'AWS::CloudFront::Function', 'PublicPki/ViewerIp');
    for (const path of ['/ocsp*', '/tsa']) {
      const behavior = distribution.CacheBehaviors.find(
        (b: { PathPattern: string }) => b.PathPattern === path,
      );
      expect(behavior.TargetOriginId).toBe(apiOrigin.Id);
      expect(behavior.FunctionAssociations).toEqual([
        { EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [functionId, 'FunctionARN'] } },
      ]);
    }
    const code = resources(template, 'AWS::CloudFront::Function')[functionId].Properties!.FunctionCode;
    expect(code).toBe(VIEWER_IP_FUNCTION);
  });

  it("the viewer's address the distribution sets: IPv4 as it is, IPv6 as its /64, whatever the viewer sent", () => {
    const handler = new Function(`${VIEWER_IP_FUNCTION}; return handler;`)() as (event: unknown) => {
      headers: Record<string, { value: string }>;
    };
    const viewerIp = (ip: string): string =>
      handler({
        viewer: { ip },
        request: { headers: { 'x-pki-viewer-ip': { value: '10.0.0.1' } } },
      }).headers['x-pki-viewer-ip'].value;
    expect(viewerIp('203.0.113.7')).toBe('203.0.113.7');
    expect(viewerIp('2001:db8:85a3:8d3:1319:8a2e:370:7348')).toBe('2001:db8:85a3:8d3::');
    expect(viewerIp('2001:db8::1')).toBe('2001:db8:0:0::');
    expect(viewerIp('2001:db8:1:2::ffff')).toBe('2001:db8:1:2::');
    expect(viewerIp('::1')).toBe('0:0:0:0::');
    // Two addresses of one /64 are one source; of two /64s, two.
    expect(viewerIp('2001:db8:1:2:aaaa::1')).toBe(viewerIp('2001:db8:1:2:bbbb::2'));
    expect(viewerIp('2001:db8:1:3::1')).not.toBe(viewerIp('2001:db8:1:2::1'));
  });

  it('the publication writes exactly the published objects; certificates point at the distribution', () => {
    const bucketId = logicalId(template, 'AWS::S3::Bucket', 'PublicPki/Objects/Resource');
    const puts = roleStatements(template, roleId('Crl')).filter((s) => actionsOf(s).includes('s3:PutObject'));
    expect(puts).toHaveLength(1);
    expect(actionsOf(puts[0])).toEqual(['s3:PutObject']);
    expect(JSON.stringify(puts[0].Resource)).toContain(bucketId);
    for (const name of ['root.crt', 'issuing.crt', 'root.crl', 'issuing.crl'])
      expect(JSON.stringify(puts[0].Resource)).toContain(`/${name}`);
    for (const name of FUNCTIONS.filter((n) => n !== 'Crl')) {
      const onBucket = roleStatements(template, roleId(name)).filter((s) =>
        JSON.stringify(s).includes(bucketId),
      );
      // Readers may list (a missing CRL reads as 404, not 403); nothing but the publication writes.
      expect(
        onBucket.flatMap(actionsOf).filter((a) => a !== 's3:GetObject' && a !== 's3:ListBucket'),
      ).toEqual([]);
    }
    // The CRL function reads the published CRL (its entries are never dropped), OCSP reads it to let it win.
    for (const name of ['Crl', 'Ocsp'] as const) {
      const gets = roleStatements(template, roleId(name)).filter((s) =>
        actionsOf(s).includes('s3:GetObject'),
      );
      expect(gets.map((s) => JSON.stringify(s.Resource)).join()).toContain('/issuing.crl');
    }
    const distribution = logicalId(
      template,
      'AWS::CloudFront::Distribution',
      'PublicPki/Distribution/Resource',
    );
    for (const name of ['Ca', 'Crl'] as const) {
      expect(JSON.stringify(env(name).PKI_BASE_URL)).toContain(distribution);
    }
    expect(env('Crl').PKI_PUBLISH_TARGET).toEqual({ 'Fn::Join': ['', ['s3:', { Ref: bucketId }]] });
  });
});
