/**
 * End to end through the local runner: HTTP -> API handler -> DynamoDB + SQS -> consumer process ->
 * signer handler (SoftHSM, pool) -> CA function over the Lambda Invoke API -> result over HTTP.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig, loadPoolConfig } from '@pipeline/config';
import { AuditRepository } from '../../../../lambdas/adapters/dynamodb/src/audit-repository';
import { assertionNonce } from '@pipeline/core/identity';
import { eventsOf, keyUsage } from '@pipeline/core/audit';
import type { KeyType } from '@pipeline/core/shared';
import { obtainIdToken } from '../../../client/src/oidc-login';
import { TEST_CITIZENS } from '../../idp/citizens';
import { CLIENT_IDS } from '../../idp/clients';
import { TABLES, tableName } from '@pipeline/resources';
import {
  call,
  localIssuer,
  sampleRequests,
  sampleRequest,
  verifySignedResult,
  type SampleRequest,
  type SignRequestView,
} from '../../client';
import { LOCAL_DIR, ROOT } from '../../paths';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';
import pLimit from 'p-limit';

jest.setTimeout(600_000);

let pipeline: LocalPipeline;
let rootPem: string;
const OTHER_CLIENT = { clientId: 'other-eservice', apiKey: `other-${randomBytes(8).toString('hex')}` };

beforeAll(async () => {
  pipeline = await startLocalPipeline({
    resourcePrefix: `e2e-${randomBytes(3).toString('hex')}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      POOL_TARGETS: 'RSA-2048=100,EC-P256=150,EC-P384=100',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      LOCAL_API_CLIENTS: `${OTHER_CLIENT.clientId}:${OTHER_CLIENT.apiKey}`,
      LOCAL_CONSUMERS: '2',
      // 100 of the requests find no pool key of their type: here every one must be generated on the fly
      // (pool-drain.e2e.test.ts shows the default bound handing them back to protect the other types) ...
      POOL_FALLBACK_MAX_IN_FLIGHT: '100',
      POOL_FALLBACK_WAIT_MS: '60000',
      // ... and the API accepts all 500 at once (fair-share.e2e.test.ts shows admission refusing a burst
      // beyond what keys serve in time).
      POOL_ADMISSION_ON_THE_FLY: '1000',
      LOG_LEVEL: 'WARN',
    },
  });
  await pipeline.runKeygen();
  rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
});

afterAll(async () => {
  await pipeline?.stop();
});

test('500 mixed requests over HTTP: all signed once, every signature and chain verifies', async () => {
  const health = await call<{ pool: Record<KeyType, number> }>(`${pipeline.url}/health`, {
    apiKey: pipeline.apiKey,
  });
  expect(health.status).toBe(200);
  const poolBefore = health.body.pool;
  expect(poolBefore['RSA-2048']).toBe(100);

  const mix: KeyType[] = [
    ...Array<KeyType>(100).fill('RSA-2048'),
    ...Array<KeyType>(200).fill('EC-P256'),
    ...Array<KeyType>(180).fill('EC-P384'),
    ...Array<KeyType>(14).fill('RSA-3072'),
    ...Array<KeyType>(6).fill('RSA-4096'),
  ];
  const requests: SampleRequest[] = await sampleRequests(mix.length, (i) =>
    sampleRequest(mix[i], i, {
      signatureAlgorithm: mix[i].startsWith('RSA') && i % 3 === 0 ? 'RSASSA-PSS' : undefined,
      digestAlgorithm: (['SHA-256', 'SHA-384', 'SHA-512'] as const)[i % 3],
    }),
  );
  const accepted = await pLimit(32).map(requests, async (request) => {
    const res = await call<{ id: string; status: string }>(`${pipeline.url}/sign-requests`, {
      apiKey: pipeline.apiKey,
      body: request.body,
    });
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/v1/sign-requests/${res.body.id}`);
    return res.body.id;
  });
  expect(new Set(accepted).size).toBe(500);

  const views = await pLimit(64).map(accepted, async (id) => {
    for (;;) {
      const res = await call<SignRequestView>(`${pipeline.url}/sign-requests/${id}?wait=20`, {
        apiKey: pipeline.apiKey,
      });
      expect(res.status).toBe(200);
      if (res.body.status === 'signed' || res.body.status === 'failed') return res.body;
    }
  });

  const problems = views
    .map((view, i) => ({ i, result: verifySignedResult(requests[i], view, rootPem) }))
    .filter((r) => !r.result.ok);
  expect(problems).toEqual([]);

  // One certificate per request, recorded by the CA; pooled requests consumed exactly one pool key each.
  const doc = documentClient(loadAwsConfig(process.env));
  const certificatesTable = tableName(TABLES.certificates);
  const perRequest = await pLimit(16).map(accepted, async (id) => {
    const out = await doc.send(
      new QueryCommand({
        TableName: certificatesTable,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `REQ#${id}` },
      }),
    );
    return out.Count ?? 0;
  });
  expect(perRequest.every((count) => count === 1)).toBe(true);
  const pooled = views.filter((v) => v.pooledKey).length;
  const after = (
    await call<{ pool: Record<KeyType, number> }>(`${pipeline.url}/health`, { apiKey: pipeline.apiKey })
  ).body.pool;
  const consumed = (['RSA-2048', 'EC-P256', 'EC-P384'] as const).reduce(
    (sum, t) => sum + (poolBefore[t] - after[t]),
    0,
  );
  expect(views.filter((v) => v.keyType === 'RSA-3072').every((v) => v.pooledKey === false)).toBe(true);

  // The audit log tells the same story on its own: one signature and one certificate per request, each
  // pooled request's key claimed by it alone, and `npm run audit -- verify` finds the log intact after a
  // fresh signed checkpoint.
  const events = eventsOf(await new AuditRepository(doc, { tableName: tableName(TABLES.audit) }).readAll());
  const mine = new Set(accepted);
  const usage = keyUsage(events.filter((e) => 'requestId' in e && mine.has(e.requestId ?? '')));
  expect(usage).toMatchObject({ signatures: accepted.length, certificates: accepted.length, reused: [] });
  // Every key claimed was signed with and destroyed, or thrown away with its reason (an attempt retried
  // after a transient failure takes a fresh key). A consumer claims a whole bundle from the table and
  // hands its keys out one by one (the prefetched one among them), so each consumer process may still
  // hold up to a bundle of each pooled type: gone from the pool, never used twice. Nothing else left it.
  expect(usage.claimed).toBe(pooled + usage.discarded);
  expect(usage.destroyed).toBeGreaterThanOrEqual(pooled);
  expect(usage.destroyed).toBeLessThanOrEqual(pooled + usage.discarded);
  expect(consumed - usage.claimed).toBeGreaterThanOrEqual(0);
  const heldAtMost = Number(pipeline.env.LOCAL_CONSUMERS) * 3 * loadPoolConfig(pipeline.env).bundleSize;
  expect(consumed - usage.claimed).toBeLessThanOrEqual(heldAtMost);
  const cli = (...args: string[]): { status: number | null; stdout: string } =>
    spawnSync(join(ROOT, 'node_modules', '.bin', 'tsx'), [join(ROOT, 'scripts', 'audit.ts'), ...args], {
      env: { ...process.env, ...pipeline.env },
      encoding: 'utf8',
    });
  expect(cli('checkpoint').stdout).toMatch(/^checkpoint \d+ signed by /);
  expect(cli('verify').stdout).toMatch(/^intact: /);

  // Every signature has a receipt; `npm run audit -- prove` checks one against the log and the signed
  // checkpoint, and refuses a receipt that points at another leaf.
  const signed = views.filter((v) => v.status === 'signed');
  expect(signed.every((v) => v.receipt && v.receipt.treeSize >= 1)).toBe(true);
  const proven = cli('prove', signed[0].id);
  expect(proven.stdout).toMatch(/proven: request /);
  expect(proven.status).toBe(0);
  const moved = {
    ...signed[0].receipt!,
    leafIndex: (signed[0].receipt!.leafIndex + 1) % signed[0].receipt!.treeSize,
  };
  await doc.send(
    new UpdateCommand({
      TableName: tableName(TABLES.requests),
      Key: { id: signed[0].id },
      UpdateExpression: 'SET receipt = :r',
      ExpressionAttributeValues: { ':r': moved },
    }),
  );
  const refused = cli('prove', signed[0].id);
  expect(refused.stdout).toMatch(/NOT PROVEN/);
  expect(refused.status).toBe(1);
});

describe('errors have statuses and codes', () => {
  const url = (): string => `${pipeline.url}/sign-requests`;
  let validBody: SampleRequest['body'];
  beforeAll(async () => {
    validBody = (await sampleRequest('EC-P256', 1)).body;
  });
  const valid = (): SampleRequest['body'] => validBody;

  test.each([
    [
      'invalid JSON',
      () => ({ rawBody: '{"digest":', headers: { 'content-type': 'application/json' } }),
      400,
      'INVALID_JSON',
    ],
    ['unknown field', () => ({ body: { ...valid(), extra: 1 } }), 400, 'VALIDATION_FAILED'],
    [
      'digest length mismatch',
      () => ({ body: { ...valid(), digestAlgorithm: 'SHA-512' } }),
      400,
      'VALIDATION_FAILED',
    ],
    [
      'key type and algorithm mismatch',
      () => ({ body: { ...valid(), signatureAlgorithm: 'RSASSA-PSS' } }),
      400,
      'VALIDATION_FAILED',
    ],
    [
      'a signer named in the body',
      () => ({
        body: (() => {
          const { identityAssertion: _token, ...rest } = valid();
          return {
            ...rest,
            signer: {
              commonName: 'Eve Evil',
              givenName: 'Eve',
              surname: 'Evil',
              serialNumber: '1',
              country: 'SE',
            },
          };
        })(),
      }),
      400,
      'SIGNER_NOT_ALLOWED',
    ],
    [
      'body too large',
      () => ({
        rawBody: JSON.stringify({ ...valid(), pad: 'x'.repeat(100_000) }),
        headers: { 'content-type': 'application/json' },
      }),
      413,
      'PAYLOAD_TOO_LARGE',
    ],
  ] as const)('%s', async (_name, init, status, code) => {
    const res = await call<{ error: { code: string; message: string } }>(url(), {
      apiKey: pipeline.apiKey,
      ...init(),
    });
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.message.length).toBeGreaterThan(0);
  });

  test('401 without an API key, 403 with a wrong one', async () => {
    const none = await call<{ error: { code: string } }>(url(), { body: valid() });
    expect([none.status, none.body.error.code]).toEqual([401, 'UNAUTHENTICATED']);
    const wrong = await call<{ error: { code: string } }>(url(), { apiKey: 'nope', body: valid() });
    expect([wrong.status, wrong.body.error.code]).toEqual([403, 'FORBIDDEN']);
  });

  test('404 for an unknown id, for another client, and for an unknown route', async () => {
    const unknown = await call<{ error: { code: string } }>(`${url()}/${randomUUID()}`, {
      apiKey: pipeline.apiKey,
    });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'NOT_FOUND']);
    const mine = await call<{ id: string }>(url(), { apiKey: pipeline.apiKey, body: valid() });
    const theirs = await call<{ error: { code: string } }>(`${url()}/${mine.body.id}`, {
      apiKey: OTHER_CLIENT.apiKey,
    });
    expect([theirs.status, theirs.body.error.code]).toEqual([404, 'NOT_FOUND']);
    const route = await call<{ error: { code: string } }>(`${pipeline.url}/nothing-here`, {
      apiKey: pipeline.apiKey,
    });
    expect([route.status, route.body.error.code]).toEqual([404, 'ROUTE_NOT_FOUND']);
  });

  test('idempotency: the same request again returns it; another body under its id is 409; its assertion is not reusable', async () => {
    const { body, citizen } = await sampleRequest('EC-P256', 2);
    const first = await call<{ id: string }>(url(), { apiKey: pipeline.apiKey, body });
    expect(first.status).toBe(202);
    const again = await call<{ id: string }>(url(), { apiKey: pipeline.apiKey, body });
    expect([200, 202]).toContain(again.status);
    expect(again.body.id).toBe(first.body.id);
    // Same id and binding, another citizen's login: another request under a used id.
    const { idToken } = await obtainIdToken({
      issuer: localIssuer(),
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: (citizen === TEST_CITIZENS[0] ? TEST_CITIZENS[1] : TEST_CITIZENS[0])
        .personalIdentityNumber,
      nonce: assertionNonce(body),
    });
    const conflict = await call<{ error: { code: string } }>(url(), {
      apiKey: pipeline.apiKey,
      body: { ...body, identityAssertion: idToken },
    });
    expect([conflict.status, conflict.body.error.code]).toEqual([409, 'REQUEST_ID_CONFLICT']);
    // The same login for another key type: not the binding it was made for.
    const rebound = await call<{ error: { code: string } }>(url(), {
      apiKey: pipeline.apiKey,
      body: { ...body, keyType: 'EC-P384' },
    });
    expect([rebound.status, rebound.body.error.code]).toEqual([400, 'ASSERTION_BINDING_MISMATCH']);
    // Another e-service presenting the same login.
    const otherClient = await call<{ error: { code: string } }>(url(), { apiKey: OTHER_CLIENT.apiKey, body });
    expect([otherClient.status, otherClient.body.error.code]).toEqual([409, 'ASSERTION_REPLAYED']);
    const done = await call<SignRequestView>(`${url()}/${first.body.id}?wait=20`, {
      apiKey: pipeline.apiKey,
    });
    expect(done.body.status).toBe('signed');
  });

  test('wait must be 0..20', async () => {
    const res = await call<{ error: { code: string } }>(`${url()}/${randomUUID()}?wait=21`, {
      apiKey: pipeline.apiKey,
    });
    expect([res.status, res.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
  });
});
