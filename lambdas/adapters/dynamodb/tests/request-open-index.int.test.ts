/**
 * The sparse open-requests index and the reconciler's writes, against DynamoDB Local: open requests are
 * listed oldest first across shards, terminal ones drop out, and a requeue is counted once per read.
 */
import { randomUUID } from 'node:crypto';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { createTestTables } from '../../../../scripts/local/resources';
import { sampleSignRequestRecord } from '../../../../scripts/local/sample-sign-request';
import { OPEN_SHARDS, RequestRepository, openShardOf } from '../src';

let repo: RequestRepository;
let tableName: string;
const T0 = Date.now() - 60 * 60_000;

beforeEach(async () => {
  const tables = await createTestTables(['requests']);
  tableName = tables.requests;
  repo = new RequestRepository(documentClient(loadAwsConfig(process.env)), { tableName });
});

/** A request id whose first hex digit is `digit` (so its shard is known). */
function idStartingWith(digit: string): string {
  return digit + randomUUID().slice(1);
}

async function created(id: string, receivedAt: number): Promise<string> {
  await repo.create(sampleSignRequestRecord({ id, receivedAt }));
  return id;
}

test('open requests are listed oldest first across shards; terminal and recent ones are not', async () => {
  const digits = ['0', '9', '3', 'e', '5'];
  expect(new Set(digits.map((d) => openShardOf(idStartingWith(d)))).size).toBe(digits.length);
  const ids = await Promise.all(digits.map((d, i) => created(idStartingWith(d), T0 + i * 1000)));
  const signing = ids[1];
  await repo.startAttempt(signing, { attemptId: 'a', startedAt: T0, leaseUntil: T0 + 1 });
  const failed = ids[2];
  await repo.abandon(failed, { code: 'X', message: 'x' }, Date.now());
  await created(idStartingWith('a'), Date.now());

  const listed = await repo.listOpen(Date.now() - 60_000, 100);
  expect(listed).toEqual([ids[0], ids[1], ids[3], ids[4]]);
  expect(await repo.listOpen(Date.now() - 60_000, 2)).toEqual([ids[0], ids[1]]);
  expect(await repo.listOpen(T0 + 3500, 100)).toEqual([ids[0], ids[1], ids[3]]);
});

test('ids map onto every shard', () => {
  const shards = new Set('0123456789abcdef'.split('').map((d) => openShardOf(idStartingWith(d))));
  expect(shards.size).toBe(OPEN_SHARDS);
});

test('a signed request leaves the index', async () => {
  const id = await created(randomUUID(), T0);
  await repo.startAttempt(id, { attemptId: 'a', startedAt: T0, leaseUntil: T0 + 1 });
  await repo.complete(id, 'a', {
    signature: 's',
    certificateSerial: '01',
    certificate: 'c',
    chain: [],
    pooledKey: true,
    keyAcquiredAt: T0,
    finishedAt: T0,
    stageMs: {},
    discardedKeys: 0,
  });
  expect(await repo.listOpen(Date.now(), 100)).toEqual([]);
});

test('a requeue is counted only against the count that was read, and only while open', async () => {
  const id = await created(randomUUID(), T0);
  expect(await repo.markRequeued(id, 0, T0 + 1)).toBe(true);
  expect(await repo.markRequeued(id, 0, T0 + 2)).toBe(false);
  expect(await repo.getOpen(id)).toMatchObject({ requeues: 1, requeuedAt: T0 + 1 });
  expect(await repo.markRequeued(id, 1, T0 + 3)).toBe(true);
  await repo.abandon(id, { code: 'DELIVERY_LOST', message: 'lost' }, Date.now());
  expect(await repo.markRequeued(id, 2, T0 + 4)).toBe(false);
  expect(await repo.getOpen(id)).toMatchObject({ status: 'failed', requeues: 2, requeuedAt: T0 + 3 });
});

test('openCounts: the open requests per key type and client (terminal ones not counted)', async () => {
  const rec = (clientId: string, keyType: 'EC-P256' | 'EC-P384') =>
    repo.create(sampleSignRequestRecord({ id: randomUUID(), receivedAt: T0, clientId, keyType }));
  await Promise.all([rec('a', 'EC-P256'), rec('a', 'EC-P256'), rec('b', 'EC-P256'), rec('a', 'EC-P384')]);
  const done = randomUUID();
  await repo.create(sampleSignRequestRecord({ id: done, receivedAt: T0, clientId: 'b', keyType: 'EC-P384' }));
  await repo.abandon(done, { code: 'X', message: 'x' }, Date.now());
  expect(await repo.openCounts()).toEqual({
    byType: { 'EC-P256': 3, 'EC-P384': 1 },
    byClient: { 'EC-P256': { a: 2, b: 1 }, 'EC-P384': { a: 1 } },
  });
});

test('openCounts: each open request counts its admissionWeight (absent: 1), whichever process created it', async () => {
  const doc = documentClient(loadAwsConfig(process.env));
  const other = new RequestRepository(doc, { tableName });
  const rec = (r: RequestRepository, clientId: string, admissionWeight?: number) =>
    r.create(
      sampleSignRequestRecord({
        id: randomUUID(),
        receivedAt: T0,
        clientId,
        keyType: 'EC-P256',
        ...(admissionWeight ? { admissionWeight } : {}),
      }),
    );
  await Promise.all([rec(repo, 'a', 10), rec(repo, 'a'), rec(other, 'b', 4), rec(other, 'b')]);
  const expected = { byType: { 'EC-P256': 16 }, byClient: { 'EC-P256': { a: 11, b: 5 } } };
  expect(await repo.openCounts()).toEqual(expected);
  expect(await other.openCounts()).toEqual(expected);
  doc.destroy();
});

test('openCounts reads each open request another process created once, and none this process created', async () => {
  const doc = documentClient(loadAwsConfig(process.env));
  let keysRead = 0;
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'BatchGetItemCommand') {
        const items = (args.input as { RequestItems: Record<string, { Keys: unknown[] }> }).RequestItems;
        keysRead += Object.values(items).reduce((n, t) => n + t.Keys.length, 0);
      }
      return next(args);
    },
    { step: 'initialize', name: 'countKeys' },
  );
  const api = new RequestRepository(doc, { tableName });
  const own = (keyType: 'EC-P256' | 'EC-P384') =>
    api.create(sampleSignRequestRecord({ id: randomUUID(), receivedAt: T0, clientId: 'a', keyType }));
  const elsewhere = (keyType: 'EC-P256' | 'EC-P384') =>
    repo.create(sampleSignRequestRecord({ id: randomUUID(), receivedAt: T0, clientId: 'b', keyType }));
  await Promise.all([own('EC-P256'), own('EC-P384'), elsewhere('EC-P256'), elsewhere('EC-P256')]);
  const expected = {
    byType: { 'EC-P256': 3, 'EC-P384': 1 },
    byClient: { 'EC-P256': { a: 1, b: 2 }, 'EC-P384': { a: 1 } },
  };
  expect(await api.openCounts()).toEqual(expected);
  expect(keysRead).toBe(2);
  expect(await api.openCounts()).toEqual(expected);
  expect(keysRead).toBe(2);
  doc.destroy();
});

test('release: only the owning attempt ends its lease now, and the next delivery may take over', async () => {
  const id = await created(randomUUID(), T0);
  const now = Date.now();
  await repo.startAttempt(id, { attemptId: 'a', startedAt: now, leaseUntil: now + 60_000 });
  expect(await repo.release(id, 'other', now)).toBe(false);
  expect(await repo.release(id, 'a', now + 5)).toBe(true);
  expect(await repo.get(id)).toMatchObject({ status: 'signing', leaseUntil: now + 5 });
  const taken = await repo.startAttempt(id, {
    attemptId: 'b',
    startedAt: now + 10,
    leaseUntil: now + 60_000,
    takeOverFrom: { attemptId: 'a' },
  });
  expect(taken).toMatchObject({ attemptId: 'b', attempts: 2 });
});
