/**
 * Every AWS call allowed and routable: a local pipeline records each SDK call its functions make
 * (AWS_CALL_RECORD_FILE) while it signs (raw and CMS B-LT, and a CSC client's hash through the CSC API
 * v2), revokes through the API, answers OCSP,
 * publishes CRLs, checkpoints the audit log, fills the pool and reconciles; each distinct call is then evaluated against the deploy-like
 * template's roles (iam-simulate) and each function's subnets checked for a way to the service. The S3
 * reads happen only on AWS (locally the objects are files): they are listed here, as the code makes them.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Template } from 'aws-cdk-lib/assertions';
import type { RecordedCall } from '@pipeline/adapters/aws';
import { runFlow } from '../scripts/bench/csc-flows';
import { call, sampleRequest, type SignRequestView } from '../scripts/local/client';
import { startLocalPipeline, type LocalPipeline } from '../scripts/local/runner/pipeline';
import { ocspGet } from '../scripts/local/runner/tests/support/relying-party';
import { synthesizeDeployLike } from './support/deploy-like';
import { callProblems, distinctCalls } from './support/recorded-calls';
import { logicalId } from './support/synth';

jest.setTimeout(180_000);

const dir = mkdtempSync(join(tmpdir(), 'aws-calls-'));
const file = join(dir, 'calls.jsonl');
let pipeline: LocalPipeline;
let template: Template;
let recorded: RecordedCall[];
let env: NodeJS.ProcessEnv;
let stopped = false;
const cleanup: Array<() => void> = [() => rmSync(dir, { recursive: true, force: true })];

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The S3 reads made only on AWS: a first run finds each object missing (ListBucket makes that a 404). */
function awsOnlyS3Calls(t: Template): RecordedCall[] {
  const pki = logicalId(t, 'AWS::S3::Bucket', 'PublicPki/Objects/Resource');
  const anchors = logicalId(t, 'AWS::S3::Bucket', 'AuditAnchors/Bucket/Resource');
  const read = (fn: string, object: string): RecordedCall => ({
    function: fn,
    service: 's3',
    action: 'GetObject',
    resources: [object],
    missingObject: true,
  });
  return [
    read('crl', `${pki}/issuing.crl`),
    read('ocsp', `${pki}/issuing.crl`),
    read('signer', `${pki}/root.crl`),
    read('audit-checkpoint', `${anchors}/checkpoints/00000000000000000001.json`),
  ];
}

beforeAll(async () => {
  const built = synthesizeDeployLike();
  cleanup.push(built.cleanup);
  template = built.synth.template;
  pipeline = await startLocalPipeline({
    resourcePrefix: `calls-${randomBytes(3).toString('hex')}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      POOL_TARGETS: 'EC-P256=3,RSA-2048=1',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      LOCAL_RECONCILE_INTERVAL_SECONDS: '1',
      LOG_LEVEL: 'WARN',
      AWS_CALL_RECORD_FILE: file,
    },
  });
  await pipeline.runKeygen();
  const signed: SignRequestView[] = [];
  // B-LT has the signer ask the TSA and the responder: the root CRL must be published first.
  const pki = pipeline.url.replace(/\/v1$/, '/pki');
  for (let i = 0; i < 300 && !(await fetch(`${pki}/root.crl`)).ok; i++) await sleep(100);
  for (const [type, index, extra] of [
    ['EC-P256', 0, {}],
    ['RSA-2048', 1, { level: 'B-LT' }],
  ] as const) {
    const request = await sampleRequest(type, index, 'level' in extra ? { format: 'cms' } : {});
    const accepted = await call<{ id: string }>(`${pipeline.url}/sign-requests`, {
      apiKey: pipeline.apiKey,
      body: { ...request.body, ...extra },
    });
    expect(accepted.status).toBe(202);
    const view = await call<SignRequestView>(`${pipeline.url}/sign-requests/${accepted.body.id}?wait=20`, {
      apiKey: pipeline.apiKey,
    });
    expect(view.body.status).toBe('signed');
    signed.push(view.body);
  }
  const revoked = await call(`${pipeline.url}/sign-requests/${signed[0].id}/revocation`, {
    apiKey: pipeline.apiKey,
    body: { reason: 'keyCompromise' },
  });
  expect(revoked.status).toBe(200);
  // A relying party asks the responder (OCSP by GET).
  expect((await ocspGet(pki, signed[0].certificate!)).stdout).toMatch(/Cert Status: revoked/);
  // A CSC client signs a hash (oauth2/authorize, the citizen's login and approval, the callback,
  // oauth2/token, signatures/signHash): the csc function's calls.
  const csc = pipeline.csc;
  expect(csc?.client).toBeDefined();
  const flow = await runFlow(
    'csc',
    {
      apiUrl: pipeline.url,
      apiKey: pipeline.apiKey,
      keyType: 'EC-P256',
      cscUrl: csc!.url,
      cscClient: csc!.client!,
      idpRedirectUri: process.env.CSC_IDP_REDIRECT_URI!,
    },
    2,
  );
  expect(flow).toMatchObject({ ok: true });
  env = { ...process.env };
  // Wait (no fixed sleep) until the scheduled functions have each run at least once.
  const seen = (): Set<string> => new Set(distinctCalls(readFileSync(file, 'utf8')).map((c) => c.function));
  for (let i = 0; i < 300 && !['crl', 'audit-checkpoint', 'reconcile'].every((f) => seen().has(f)); i++)
    await sleep(200);
  await pipeline.stop();
  stopped = true;
  recorded = distinctCalls(readFileSync(file, 'utf8'));
}, 180_000);

afterAll(async () => {
  if (!stopped) await pipeline?.stop();
  cleanup.forEach((done) => done());
});

test('every function made calls: the recording covers the pipeline', () => {
  const functions = new Set(recorded.map((c) => c.function));
  for (const fn of [
    'api',
    'signer',
    'ca',
    'revoke',
    'ocsp',
    'crl',
    'keygen',
    'audit-checkpoint',
    'reconcile',
    'csc',
  ])
    expect(functions).toContain(fn);
  // The CSC door's own items (its table: FLOW#, CODE#, TOKEN#) and the intake it shares with the API.
  const cscTables = new Set(
    recorded.filter((c) => c.function === 'csc' && c.service === 'dynamodb').flatMap((c) => c.resources),
  );
  expect([...cscTables].some((t) => t.includes('csc'))).toBe(true);
  expect(recorded).toContainEqual(
    expect.objectContaining({ function: 'csc', service: 'sqs', action: 'SendMessage' }),
  );
  // B-LT: the signer stamps its signature at the TSA.
  expect(recorded).toContainEqual(
    expect.objectContaining({ function: 'signer', action: 'Invoke', resources: ['tsa'] }),
  );
});

test('every recorded call is allowed by its role and reaches its service', async () => {
  expect(await callProblems(template, [...recorded, ...awsOnlyS3Calls(template)], env)).toEqual([]);
});

test('a call outside a role’s item keys is reported: the leading-key shapes are evaluated', async () => {
  const audit = recorded.find((c) => c.function === 'ca' && c.action === 'TransactWriteItems')!;
  const table = audit.items!.find((i) => i.key?.startsWith('CHAIN#'))!.table;
  const rewrite: RecordedCall = {
    ...audit,
    items: [{ table, action: 'PutItem', key: 'CHECKPOINT#HEAD' }],
  };
  expect(await callProblems(template, [rewrite], env)).toEqual([
    expect.stringMatching(
      /^ca: dynamodb:PutItem on .* \{"dynamodb:LeadingKeys":\["CHECKPOINT#HEAD"\]\} is ImplicitlyDenied$/,
    ),
  ]);
});

test('the check fails on a template without the S3 endpoint or the readers’ ListBucket', async () => {
  const json = template.toJSON() as { Resources: Record<string, Record<string, unknown>> };
  const copy = JSON.parse(JSON.stringify(json)) as typeof json;
  for (const [id, resource] of Object.entries(copy.Resources)) {
    const props = resource.Properties as Record<string, unknown> | undefined;
    if (resource.Type === 'AWS::EC2::VPCEndpoint' && JSON.stringify(props?.ServiceName).includes('.s3'))
      delete copy.Resources[id];
    if (resource.Type === 'AWS::IAM::Policy') {
      const doc = props!.PolicyDocument as { Statement: Array<{ Action: unknown }> };
      doc.Statement = doc.Statement.filter((s) => JSON.stringify(s.Action) !== '"s3:ListBucket"');
    }
  }
  const problems = await callProblems(Template.fromJSON(copy), awsOnlyS3Calls(template), env);
  expect(problems).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/^crl: s3:ListBucket on arn:aws:s3:::.* is ImplicitlyDenied$/),
      expect.stringMatching(/^audit-checkpoint: s3:ListBucket/),
      'crl: no endpoint or NAT route to s3 from its subnets',
      'signer: no endpoint or NAT route to s3 from its subnets',
    ]),
  );
});
