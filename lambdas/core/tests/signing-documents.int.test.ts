/**
 * Requests with `documents` through the real signing core: SoftHSM, the real CA over DynamoDB Local, the
 * CMS builder and the DynamoDB request store. One pool key and one certificate for the request, one
 * signature per document in input order (each container judged by `openssl cms -verify`), the key
 * destroyed after the last; a failure of any document fails the whole request with nothing released;
 * fifty large results (beyond one 400 KB item) are stored apart and read back in order.
 */
import { createHash, randomBytes, verify, X509Certificate } from 'node:crypto';
import { loadConfig } from '@pipeline/config';
import { buildCsr, prepareCmsContainer } from '@pipeline/der';
import { opensslCmsVerify } from '../../../scripts/local/verify/openssl';
import { sampleSignRequestRecord } from '../../../scripts/local/sample-sign-request';
import { createTestSigningStack, type TestSigningStack } from '../../../scripts/local/signing-stack';
import { AuditLog } from '@pipeline/audit';
import { InMemoryPoolMetrics, fillPool } from '../src/pool';
import { eventsOf } from '../src/audit';
import { processSignRequest, type SignDocument, type SigningDeps } from '../src/signing';

const config = loadConfig(process.env);
let stack: TestSigningStack;
let audit: AuditLog;

beforeAll(async () => {
  stack = await createTestSigningStack({ poolShards: 2 });
  audit = new AuditLog(stack.auditStore, { chains: 2 });
  await fillPool(
    { hsm: stack.hsm, pool: stack.pool, metrics: new InMemoryPoolMetrics() },
    {
      keyType: 'EC-P256',
      count: 4,
      parallelism: 1,
      deadline: Date.now() + 60_000,
      wrapKeyLabel: config.hsm.wrapKeyLabel,
      hsmProfile: config.hsm.profile,
      maxAgeSeconds: 3600,
    },
  );
}, 120_000);

afterAll(async () => stack?.close());

function deps(overrides: Partial<SigningDeps> = {}): SigningDeps {
  return {
    requests: stack.requests,
    pool: stack.pool,
    hsm: stack.hsm,
    buildCsr,
    issuer: stack.issuer,
    buildContainer: prepareCmsContainer,
    audit,
    metrics: new InMemoryPoolMetrics(),
    settings: {
      emptyPoolPolicy: 'reject',
      retryAfterSeconds: 30,
      leaseMs: 30_000,
      hsmProfile: config.hsm.profile,
    },
    ...overrides,
  };
}

function documentOf(
  format: 'raw' | 'cms',
  profile?: 'CAdES-B-B' | 'PAdES-B-B',
): { content: Buffer; doc: SignDocument } {
  const content = randomBytes(300);
  const digest = createHash('sha256').update(content).digest('base64');
  return {
    content,
    doc: {
      digest,
      digestAlgorithm: 'SHA-256',
      format,
      ...(profile ? { profile, level: 'B-B' as const, minimumLevel: 'B-B' as const } : {}),
    },
  };
}

test('one key, one certificate, one signature per document in input order, each verified; the key destroyed', async () => {
  const docs = [documentOf('cms', 'PAdES-B-B'), documentOf('raw'), documentOf('cms', 'CAdES-B-B')];
  const record = sampleSignRequestRecord({ documents: docs.map((d) => d.doc) });
  await stack.requests.create(record);
  const objectsBefore = await stack.hsm.countSessionObjects();
  const outcome = await processSignRequest(deps(), record.id);
  expect(outcome.status).toBe('signed');
  const stored = (await stack.requests.get(record.id))!;
  const results = stored.documentResults!;
  expect(results.map((r) => r.index)).toEqual([0, 1, 2]);
  const leaf = new X509Certificate(stored.certificate!);
  const rootPem = stack.caCertificates.rootPem;
  expect(
    opensslCmsVerify({ cms: Buffer.from(results[0].cms!, 'base64'), content: docs[0].content, rootPem }).ok,
  ).toBe(true);
  expect(
    verify('sha256', docs[1].content, leaf.publicKey, Buffer.from(results[1].signature!, 'base64')),
  ).toBe(true);
  expect(
    opensslCmsVerify({ cms: Buffer.from(results[2].cms!, 'base64'), content: docs[2].content, rootPem }).ok,
  ).toBe(true);
  // One claim, one destroy, one signature event per document (by index), one certificate.
  const events = eventsOf(await stack.auditStore.readAll()).filter(
    (e) => 'requestId' in e && e.requestId === record.id,
  );
  expect(events.map((e) => [e.type, (e as { documentIndex?: number }).documentIndex])).toEqual([
    ['pool.key-claimed', undefined],
    ['signature.made', 0],
    ['signature.made', 1],
    ['signature.made', 2],
    ['pool.key-destroyed', undefined],
  ]);
  expect(await stack.hsm.countSessionObjects()).toBe(objectsBefore);
});

test('a document that cannot reach its minimum level fails the whole request: nothing released, the key destroyed', async () => {
  const stamped = {
    ...documentOf('cms', 'CAdES-B-B').doc,
    level: 'B-T' as const,
    minimumLevel: 'B-T' as const,
  };
  const record = sampleSignRequestRecord({ documents: [documentOf('raw').doc, stamped] });
  await stack.requests.create(record);
  const objectsBefore = await stack.hsm.countSessionObjects();
  const outcome = await processSignRequest(
    deps({
      timeStamper: {
        timeStamp: async () => {
          throw new Error('the TSA is down');
        },
      },
    }),
    record.id,
  );
  expect(outcome.status).toBe('failed');
  const stored = (await stack.requests.get(record.id))!;
  expect(stored.error?.code).toBe('TSA_UNAVAILABLE');
  expect([stored.documentResults, stored.signature, stored.cms]).toEqual([undefined, undefined, undefined]);
  expect(await stack.hsm.countSessionObjects()).toBe(objectsBefore);
});

test('fifty results of 30 KB each (1.5 MB, beyond one 400 KB item) are stored apart and read back in input order', async () => {
  const documents = Array.from({ length: 50 }, () => documentOf('raw').doc);
  const record = sampleSignRequestRecord({ documents });
  await stack.requests.create(record);
  const attempt = 'attempt-50';
  const now = Date.now();
  expect(
    await stack.requests.startAttempt(record.id, {
      attemptId: attempt,
      startedAt: now,
      leaseUntil: now + 60_000,
    }),
  ).toBeDefined();
  const big = (i: number) => randomBytes(22_000).toString('base64') + String(i);
  const documentResults = documents.map((_, index) => ({
    index,
    cms: big(index),
    reachedLevel: 'B-LT' as const,
    validationData: { certificates: [], ocspResponses: [randomBytes(1000).toString('base64')], crls: [] },
  }));
  const completed = await stack.requests.complete(record.id, attempt, {
    certificate: 'PEM',
    certificateSerial: '0a',
    chain: [],
    pooledKey: true,
    keyAcquiredAt: now,
    finishedAt: now,
    stageMs: {},
    discardedKeys: 0,
    documentResults,
    resultsExpireAt: record.expiresAt,
  });
  expect(completed?.status).toBe('signed');
  const read = (await stack.requests.get(record.id))!;
  expect(read.documentResults?.map((r) => r.cms)).toEqual(documentResults.map((r) => r.cms));
  expect(read.documentResults?.[49].validationData).toEqual(documentResults[49].validationData);
});
