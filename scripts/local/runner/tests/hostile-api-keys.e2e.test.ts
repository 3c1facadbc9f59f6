/**
 * One e-service spending another's usage plan, against the running local pipeline with IAM authorization
 * required (LOCAL_API_REQUIRE_SIGV4=1, as on AWS): client A signs its calls (SigV4) with its own
 * credentials but presents client B's API key. The gateway verifies the signature and passes the caller
 * (`userArn`) and the key (`apiKeyId`) as API Gateway does; the API function, which knows whose key each is
 * (API_KEY_PRINCIPALS, as the CDK app sets it), refuses 403 FORBIDDEN: nothing is stored or queued and A
 * gets no service on B's plan. Leaving the signature out, or signing with A's key id and a guessed secret,
 * gets nowhere either. A with its own key, and B with its own, are served.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { sqsClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { TABLES, tableName } from '@pipeline/resources';
import { signApiRequest } from '../../../client/src/sigv4';
import { call, sampleRequest, type SignRequestView } from '../../client';
import type { SigningApiClient } from '../api-keys';
import type { LocalPipeline } from '../pipeline';
import { startHostilePipeline, type HostilePipeline } from './support/hostile-pipeline';
import { until } from './support/relying-party';

jest.setTimeout(180_000);

const A = { clientId: 'tax-agency', apiKey: `a-${randomBytes(12).toString('hex')}` };
const B = { clientId: 'pension-agency', apiKey: `b-${randomBytes(12).toString('hex')}` };
/** Each client's daily quota: small enough to count what is spent on B's plan. */
const QUOTA = 12;

let hostile: HostilePipeline | undefined;
let pipeline: LocalPipeline;
let doc: HostilePipeline['doc'];
let a: SigningApiClient;
let b: SigningApiClient;
/** Calls counted on B's usage plan so far (every call presenting B's key that passes the gateway). */
let spentOnB = 0;

beforeAll(async () => {
  hostile = await startHostilePipeline('hostile-keys', {
    POOL_TARGETS: 'EC-P256=4',
    LOCAL_API_CLIENTS: `${A.clientId}:${A.apiKey},${B.clientId}:${B.apiKey}`,
    LOCAL_API_REQUIRE_SIGV4: '1',
    LOCAL_CLIENT_QUOTA_PER_DAY: String(QUOTA),
  });
  ({ pipeline, doc } = hostile);
  a = pipeline.clients.find((c) => c.clientId === A.clientId)!;
  b = pipeline.clients.find((c) => c.clientId === B.clientId)!;
  expect(a.accessKeyId).not.toBe(b.accessKeyId);
}, 120_000);

afterAll(() => hostile?.stop());

async function stored(id: string): Promise<unknown> {
  const found = await doc.send(new GetCommand({ TableName: tableName(TABLES.requests), Key: { id } }));
  return found.Item;
}

async function queued(): Promise<number> {
  const sqs = sqsClient(loadAwsConfig(process.env));
  try {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: pipeline.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return (
      Number(Attributes?.ApproximateNumberOfMessages) +
      Number(Attributes?.ApproximateNumberOfMessagesNotVisible)
    );
  } finally {
    sqs.destroy();
  }
}

test("A signing with its own credentials but presenting B's API key is refused 403 FORBIDDEN: nothing stored or queued", async () => {
  const request = await sampleRequest('EC-P256', 0);
  const refused = await call(`${pipeline.url}/sign-requests`, {
    apiKey: b.apiKey,
    credentials: a,
    body: request.body,
  });
  spentOnB++;
  expect(refused.status).toBe(403);
  expect(refused.body).toMatchObject({ error: { code: 'FORBIDDEN' } });
  // Nor can A read B's requests with B's key.
  const read = await call(`${pipeline.url}/sign-requests/${randomUUID()}`, {
    apiKey: b.apiKey,
    credentials: a,
  });
  spentOnB++;
  expect(read.status).toBe(403);
  expect(read.body).toMatchObject({ error: { code: 'FORBIDDEN' } });

  expect(await stored(request.body.requestId)).toBeUndefined();
  expect(await queued()).toBe(0);
});

test('leaving the signature out or guessing a secret gets nowhere: the key alone is no credential', async () => {
  const request = await sampleRequest('EC-P256', 1);
  const unsigned = await call(`${pipeline.url}/sign-requests`, { apiKey: b.apiKey, body: request.body });
  expect(unsigned.status).toBe(401);
  expect(unsigned.body).toMatchObject({ error: { code: 'UNAUTHENTICATED' } });
  const guessed = await call(`${pipeline.url}/sign-requests`, {
    apiKey: b.apiKey,
    credentials: { accessKeyId: b.accessKeyId, secretAccessKey: randomBytes(30).toString('base64url') },
    body: request.body,
  });
  expect(guessed.status).toBe(403);
  expect(guessed.body).toMatchObject({ error: { code: 'FORBIDDEN' } });
  // A's signature over another body, sent with this one (with A's own key): the body is signed too.
  const other = await sampleRequest('EC-P256', 2);
  const url = `${pipeline.url}/sign-requests`;
  const headers = { 'x-api-key': a.apiKey, 'content-type': 'application/json' };
  const signature = await signApiRequest(a, {
    url,
    method: 'POST',
    headers,
    body: JSON.stringify(other.body),
  });
  const swapped = await fetch(url, {
    method: 'POST',
    headers: { ...headers, ...signature },
    body: JSON.stringify(request.body),
  });
  expect(swapped.status).toBe(403);
  expect(await swapped.json()).toMatchObject({ error: { code: 'FORBIDDEN' } });
  expect(await stored(request.body.requestId)).toBeUndefined();
});

test('A with its own key and B with its own are served; B keeps its quota but for what the gateway counted', async () => {
  const request = await sampleRequest('EC-P256', 3);
  const accepted = await call<{ id: string }>(`${pipeline.url}/sign-requests`, {
    apiKey: a.apiKey,
    credentials: a,
    body: request.body,
  });
  expect(accepted.status).toBe(202);
  const view = await until('A request to end', async () => {
    const res = await call<SignRequestView>(`${pipeline.url}/sign-requests/${accepted.body.id}?wait=10`, {
      apiKey: a.apiKey,
      credentials: a,
    });
    return ['signed', 'failed'].includes(res.body.status) ? res.body : undefined;
  });
  expect(view.status).toBe('signed');
  expect(await stored(request.body.requestId)).toMatchObject({ clientId: A.clientId });

  // B's own calls go on, up to its quota: the refused calls above count on B's usage plan as API
  // Gateway counts them (before the function runs), and gave A nothing.
  const ofB = await sampleRequest('EC-P256', 4);
  const own = await call(`${pipeline.url}/sign-requests`, {
    apiKey: b.apiKey,
    credentials: b,
    body: ofB.body,
  });
  spentOnB++;
  expect(own.status).toBe(202);
  expect(await stored(ofB.body.requestId)).toMatchObject({ clientId: B.clientId });
  let served = 0;
  for (;;) {
    const res = await call(`${pipeline.url}/sign-requests/${randomUUID()}`, {
      apiKey: b.apiKey,
      credentials: b,
    });
    if (res.status === 429) {
      expect(res.body).toMatchObject({ error: { code: 'QUOTA_EXCEEDED' } });
      break;
    }
    expect(res.status).toBe(404);
    served++;
  }
  expect(served).toBe(QUOTA - spentOnB);
});
