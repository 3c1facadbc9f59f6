/**
 * Batched record transitions against DynamoDB Local: the transitions concurrent attempts ask for go as one
 * TransactWriteItems, each keeps its own condition, and a record whose condition fails is answered
 * undefined without stopping the others. Starts go alone (one UpdateItem returning the record); the
 * records this repository started are answered after their complete or fail without a read.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { createTestTables } from '../../../../scripts/local/resources';
import { sampleSignRequestRecord } from '../../../../scripts/local/sample-sign-request';
import { RequestRepository } from '../src';

let tableName: string;
let doc: DynamoDBDocumentClient;
let counts: Map<string, number>;

beforeAll(async () => {
  tableName = (await createTestTables(['requests'])).requests;
  doc = documentClient(loadAwsConfig(process.env));
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'countCommands' },
  );
});

beforeEach(() => {
  counts = new Map();
});

afterAll(() => doc.destroy());

async function created(n: number, repo: RequestRepository): Promise<string[]> {
  const records = Array.from({ length: n }, () => sampleSignRequestRecord());
  await Promise.all(records.map((r) => repo.create(r)));
  counts.clear();
  return records.map((r) => r.id);
}

const start = (attemptId: string) => {
  const now = Date.now();
  return { attemptId, startedAt: now, leaseUntil: now + 60_000 };
};

test('20 concurrent starts: one UpdateItem each (one item operation), every record started by its own attempt', async () => {
  const repo = new RequestRepository(doc, {
    tableName,
    batching: { windowMs: 1000, maxBatch: 100, waiting: () => 20 },
  });
  const ids = await created(20, repo);
  const started = await Promise.all(ids.map((id, i) => repo.startAttempt(id, start(`a${i}`))));
  expect(started.map((r) => [r?.id, r?.status, r?.attemptId, r?.attempts])).toEqual(
    ids.map((id, i) => [id, 'signing', `a${i}`, 1]),
  );
  expect(Object.fromEntries(counts)).toEqual({ UpdateItemCommand: 20 });
});

test('a record whose condition fails is answered undefined; the others are written in a second transaction', async () => {
  const plain = new RequestRepository(doc, { tableName });
  const repo = new RequestRepository(doc, {
    tableName,
    batching: { windowMs: 1000, maxBatch: 100, waiting: () => 5 },
  });
  const ids = await created(5, plain);
  // Started by this process's attempts b0..b4 except ids[2], which another attempt holds.
  await Promise.all(ids.map((id, i) => (i === 2 ? plain : repo).startAttempt(id, start(`b${i}`))));
  counts.clear();
  const outcomes = await Promise.all(
    ids.map((id, i) => repo.release(id, i === 2 ? 'not-mine' : `b${i}`, Date.now())),
  );
  expect(outcomes).toEqual([true, true, false, true, true]);
  expect(Object.fromEntries(counts)).toEqual({ TransactWriteItemsCommand: 2, BatchGetItemCommand: 1 });
  expect((await plain.get(ids[2]))?.attemptId).toBe('b2');
});

test('two transitions of one record in a batch: the second runs after the first, alone', async () => {
  const plain = new RequestRepository(doc, { tableName });
  const repo = new RequestRepository(doc, {
    tableName,
    batching: { windowMs: 1000, maxBatch: 100, waiting: () => 3 },
  });
  const ids = await created(2, plain);
  await Promise.all(ids.map((id, i) => plain.startAttempt(id, start(`c${i}`))));
  counts.clear();
  const [first, duplicate, other] = await Promise.all([
    repo.release(ids[0], 'c0', Date.now()),
    repo.release(ids[0], 'c0', Date.now()),
    repo.release(ids[1], 'c1', Date.now()),
  ]);
  expect([first, duplicate, other]).toEqual([true, true, true]);
  expect(Object.fromEntries(counts)).toEqual({
    TransactWriteItemsCommand: 1,
    BatchGetItemCommand: 1,
    UpdateItemCommand: 1,
  });
});

const signedResult = (finishedAt: number) => ({
  signature: 'c2ln',
  certificate: 'cert',
  certificateSerial: '01',
  chain: [],
  pooledKey: true,
  keyAcquiredAt: finishedAt,
  finishedAt,
  stageMs: {},
  discardedKeys: 0,
});

test('finishing a batch this process started: signed and failed in one transaction, no read; a superseded attempt refused', async () => {
  const plain = new RequestRepository(doc, { tableName });
  const repo = new RequestRepository(doc, {
    tableName,
    batching: { windowMs: 1000, maxBatch: 100, waiting: () => 3 },
  });
  const ids = await created(3, plain);
  await Promise.all(ids.map((id, i) => repo.startAttempt(id, start(`d${i}`))));
  counts.clear();
  const finishedAt = Date.now();
  const signed = signedResult(finishedAt);
  const [done, failed, superseded] = await Promise.all([
    repo.complete(ids[0], 'd0', signed),
    repo.fail(ids[1], 'd1', { error: { code: 'HSM_SIGN_FAILED', message: 'sign: HsmError' }, finishedAt }),
    repo.complete(ids[2], 'not-mine', signed),
  ]);
  expect(Object.fromEntries(counts)).toEqual({ TransactWriteItemsCommand: 2 });
  expect(superseded).toBeUndefined();
  expect((await plain.get(ids[2]))?.status).toBe('signing');
  // What is answered without a read is what the table holds.
  expect(done).toEqual(await plain.get(ids[0]));
  expect(failed).toEqual(await plain.get(ids[1]));
  expect(done).toMatchObject({ status: 'signed', certificate: 'cert', attempts: 1 });
  expect(done).not.toHaveProperty('identityAssertion');
  expect(failed).toMatchObject({ status: 'failed', error: { code: 'HSM_SIGN_FAILED' } });
});

test('finishing records another process started: one transaction and one read back', async () => {
  const plain = new RequestRepository(doc, { tableName });
  const repo = new RequestRepository(doc, {
    tableName,
    batching: { windowMs: 1000, maxBatch: 100, waiting: () => 2 },
  });
  const ids = await created(2, plain);
  await Promise.all(ids.map((id, i) => plain.startAttempt(id, start(`e${i}`))));
  counts.clear();
  const finishedAt = Date.now();
  const [a, b] = await Promise.all([
    repo.complete(ids[0], 'e0', signedResult(finishedAt)),
    repo.complete(ids[1], 'e1', signedResult(finishedAt)),
  ]);
  expect(Object.fromEntries(counts)).toEqual({ TransactWriteItemsCommand: 1, BatchGetItemCommand: 1 });
  expect(a).toEqual(await plain.get(ids[0]));
  expect(b).toMatchObject({ status: 'signed' });
});
