/**
 * Batched record transitions against DynamoDB Local: the transitions concurrent attempts ask for go as one
 * TransactWriteItems and one BatchGetItem, each keeps its own condition, and a record whose condition
 * fails is answered undefined without stopping the others.
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
  doc = documentClient(loadAwsConfig());
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

test('20 concurrent starts: one transaction and one read, every record started by its own attempt', async () => {
  const repo = new RequestRepository(doc, {
    tableName,
    batching: { windowMs: 1000, maxBatch: 100, waiting: () => 20 },
  });
  const ids = await created(20, repo);
  const started = await Promise.all(ids.map((id, i) => repo.startAttempt(id, start(`a${i}`))));
  expect(started.map((r) => [r?.id, r?.status, r?.attemptId, r?.attempts])).toEqual(
    ids.map((id, i) => [id, 'signing', `a${i}`, 1]),
  );
  expect(Object.fromEntries(counts)).toEqual({ TransactWriteItemsCommand: 1, BatchGetItemCommand: 1 });
});

test('a record whose condition fails is answered undefined; the others are written in a second transaction', async () => {
  const plain = new RequestRepository(doc, { tableName });
  const repo = new RequestRepository(doc, {
    tableName,
    batching: { windowMs: 1000, maxBatch: 100, waiting: () => 5 },
  });
  const ids = await created(5, plain);
  // Already started by someone else: a fresh start must fail its condition.
  await plain.startAttempt(ids[2], start('other'));
  counts.clear();
  const started = await Promise.all(ids.map((id, i) => repo.startAttempt(id, start(`b${i}`))));
  expect(started.map((r) => r?.attemptId)).toEqual(['b0', 'b1', undefined, 'b3', 'b4']);
  expect(Object.fromEntries(counts)).toEqual({ TransactWriteItemsCommand: 2, BatchGetItemCommand: 1 });
  expect((await plain.get(ids[2]))?.attemptId).toBe('other');
});

test('two transitions of one record in a batch: the second runs after the first, alone', async () => {
  const repo = new RequestRepository(doc, {
    tableName,
    batching: { windowMs: 1000, maxBatch: 100, waiting: () => 3 },
  });
  const ids = await created(2, repo);
  const [first, duplicate, other] = await Promise.all([
    repo.startAttempt(ids[0], start('c0')),
    repo.startAttempt(ids[0], start('c1')),
    repo.startAttempt(ids[1], start('c2')),
  ]);
  // Exactly one of the two starts of ids[0] won; the duplicate met a started record.
  expect(first?.attemptId).toBe('c0');
  expect(duplicate).toBeUndefined();
  expect(other?.attemptId).toBe('c2');
  expect(Object.fromEntries(counts)).toEqual({
    TransactWriteItemsCommand: 1,
    BatchGetItemCommand: 1,
    UpdateItemCommand: 1,
  });
});

test('finishing a batch: signed and failed records in one transaction, a superseded attempt refused', async () => {
  const plain = new RequestRepository(doc, { tableName });
  const repo = new RequestRepository(doc, {
    tableName,
    batching: { windowMs: 1000, maxBatch: 100, waiting: () => 3 },
  });
  const ids = await created(3, plain);
  await Promise.all(ids.map((id, i) => plain.startAttempt(id, start(`d${i}`))));
  counts.clear();
  const finishedAt = Date.now();
  const signed = {
    signature: 'c2ln',
    certificate: 'cert',
    certificateSerial: '01',
    chain: [],
    pooledKey: true,
    keyAcquiredAt: finishedAt,
    finishedAt,
    stageMs: {},
    discardedKeys: 0,
  };
  const [done, failed, superseded] = await Promise.all([
    repo.complete(ids[0], 'd0', signed),
    repo.fail(ids[1], 'd1', { error: { code: 'HSM_SIGN_FAILED', message: 'sign: HsmError' }, finishedAt }),
    repo.complete(ids[2], 'not-mine', signed),
  ]);
  expect(done).toMatchObject({ status: 'signed', certificate: 'cert' });
  expect(failed).toMatchObject({ status: 'failed', error: { code: 'HSM_SIGN_FAILED' } });
  expect(superseded).toBeUndefined();
  expect(Object.fromEntries(counts)).toEqual({ TransactWriteItemsCommand: 2, BatchGetItemCommand: 1 });
  expect((await plain.get(ids[2]))?.status).toBe('signing');
});
