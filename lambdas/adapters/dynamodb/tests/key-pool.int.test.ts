/**
 * Integration tests of the key pool against DynamoDB Local and the SoftHSM token: filling with real
 * wrapped keys, concurrent exactly-once claims, expiry, counters, and the fill deadline.
 *
 * EC-P256 keys fill the 200-key pool: SoftHSM generates them in ~1 ms, where 200 RSA-2048 keys take
 * ~50 s on this 2-core machine. The pool's logic does not depend on the key type (the wrapped blob is
 * opaque to it); RSA keys go through the same path in the signing tests and the bench.
 */
import { randomUUID } from 'node:crypto';
import { DeleteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { connectHsm, type Pkcs11Hsm } from '@pipeline/adapters/hsm';
import { loadConfig } from '@pipeline/config';
import { InMemoryPoolMetrics, PrefetchingKeyClaimer, fillPool, type PoolKey } from '@pipeline/core/pool';
import type { KeyType } from '@pipeline/core/shared';
import { createTestTables } from '../../../../scripts/local/resources';
import { storedPoolBundles, storedPoolKeys } from '../../../test-support/dynamodb';
import { KeyPoolRepository, shardPk } from '../src';

const config = loadConfig(process.env);
let hsm: Pkcs11Hsm;
let doc: DynamoDBDocumentClient;
let tableName: string;

beforeAll(async () => {
  hsm = await connectHsm(config.hsm, config.aws);
  doc = documentClient(config.aws);
  tableName = (await createTestTables(['keyPool'])).keyPool;
});

afterAll(async () => {
  doc?.destroy();
  await hsm?.close();
});

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

const storedBundles = (keyType: KeyType, shards: number, table: string = tableName) =>
  storedPoolBundles(doc, table, keyType, shards);
const storedKeys = (keyType: KeyType, shards: number) => storedPoolKeys(doc, tableName, keyType, shards);

function fakeKey(keyType: KeyType, expiresAt: number): PoolKey {
  return {
    keyId: randomUUID(),
    keyType,
    wrappedKey: Buffer.from('not-a-real-wrapped-key'),
    publicKeySpki: Buffer.from('not-a-real-spki'),
    wrapKeyLabel: config.hsm.wrapKeyLabel,
    hsmProfile: config.hsm.profile,
    createdAt: Date.now(),
    expiresAt,
  };
}

describe('fill 200 keys, then 20 concurrent claimers take them', () => {
  const keyType: KeyType = 'EC-P256';
  const shards = 4;
  let pool: KeyPoolRepository;

  beforeAll(() => {
    pool = new KeyPoolRepository(doc, { tableName, shards });
  });

  test('fillPool stores 200 complete items, counts them, and leaves no HSM object behind', async () => {
    const objectsBefore = await hsm.countSessionObjects();
    const metrics = new InMemoryPoolMetrics();
    const result = await fillPool(
      { hsm, pool, metrics },
      {
        keyType,
        count: 200,
        parallelism: 4,
        deadline: Date.now() + 60_000,
        wrapKeyLabel: config.hsm.wrapKeyLabel,
        hsmProfile: config.hsm.profile,
        maxAgeSeconds: 3600,
      },
    );
    expect(result).toMatchObject({ requested: 200, generated: 200, stored: 200, lost: 0, stoppedBy: 'done' });
    expect(await hsm.countSessionObjects()).toBe(objectsBefore);
    expect(metrics.counter('KeysAdded', keyType)).toBe(200);
    expect((await pool.available([keyType]))[keyType]).toBe(200);

    const items = await storedKeys(keyType, shards);
    expect(items).toHaveLength(200);
    for (const item of items) {
      expect(Buffer.from(item.wrappedKey as Uint8Array).length).toBeGreaterThan(32);
      expect(Buffer.from(item.publicKeySpki as Uint8Array).length).toBeGreaterThan(60);
      expect(item).toMatchObject({ keyType, wrapKeyLabel: config.hsm.wrapKeyLabel, hsmProfile: 'softhsm' });
      expect(item.expiresAt).toBeGreaterThan(nowSeconds());
    }
    // Spread over every shard, evenly (round-robin): no shard is a hot partition.
    const perShard = new Map<number, number>();
    for (const item of items)
      perShard.set(item.shard as number, (perShard.get(item.shard as number) ?? 0) + 1);
    expect([...perShard.values()].sort()).toEqual([50, 50, 50, 50]);
  });

  test('20 concurrent claimers take all 200 keys, each exactly once, then the pool is empty', async () => {
    const taken: PoolKey[][] = Array.from({ length: 20 }, () => []);
    // Each claimer is its own repository (its own candidate hints), like 20 Lambda environments, and
    // claims until the pool says empty: an early "empty" would be a spurious failure.
    await Promise.all(
      taken.map(async (mine) => {
        const own = new KeyPoolRepository(doc, { tableName, shards });
        for (;;) {
          const key = await own.claim(keyType, nowSeconds());
          if (!key) {
            // Counter decrements go out once a second (or on a later claim): write the last ones now.
            await own.flushClaimCounters();
            return;
          }
          mine.push(key);
        }
      }),
    );
    const all = taken.flat();
    expect(all).toHaveLength(200);
    expect(new Set(all.map((k) => k.keyId)).size).toBe(200);
    expect(new Set(all.map((k) => k.wrappedKey.toString('base64'))).size).toBe(200);
    expect(taken.filter((mine) => mine.length > 0).length).toBeGreaterThan(1);
    // The 201st claim finds nothing, the items are gone, the counters are back to zero.
    expect(await pool.claim(keyType, nowSeconds())).toBeUndefined();
    expect(await storedKeys(keyType, shards)).toHaveLength(0);
    expect((await pool.available([keyType]))[keyType]).toBe(0);

    // A claimed key really unwraps in the HSM (the stored blob is the real thing) and can sign.
    const key = await hsm.unwrapPrivateKey(all[0].wrappedKey, keyType, all[0].wrapKeyLabel);
    try {
      const signature = await hsm.signDigest(key, Buffer.alloc(32, 7), {
        digestAlgorithm: 'SHA-256',
        signatureAlgorithm: 'ECDSA',
      });
      expect(signature.length).toBeGreaterThan(60);
    } finally {
      await hsm.destroy(key);
    }
  });
});

describe('claims', () => {
  test('racing claimers on a single shard never share a key and never fail spuriously', async () => {
    const pool = new KeyPoolRepository(doc, { tableName, shards: 1, candidates: 3 });
    const keyType: KeyType = 'RSA-3072';
    const keys = Array.from({ length: 40 }, () => fakeKey(keyType, nowSeconds() + 600));
    expect(await pool.add(keys)).toEqual({
      written: 40,
      unwritten: 0,
      writtenKeyIds: keys.map((k) => k.keyId),
    });
    const results = await Promise.all(Array.from({ length: 50 }, () => pool.claim(keyType, nowSeconds())));
    const claimed = results.filter((k): k is PoolKey => k !== undefined);
    expect(claimed).toHaveLength(40);
    expect(new Set(claimed.map((k) => k.keyId)).size).toBe(40);
    // Written now, not by the timer a second later in the middle of another test.
    await pool.flushClaimCounters();
  });

  test('a key claimed once is gone: a second delete of the same item cannot return it', async () => {
    const pool = new KeyPoolRepository(doc, { tableName, shards: 1 });
    const key = fakeKey('EC-P384', nowSeconds() + 600);
    await pool.add([key]);
    const claimed = await pool.claim('EC-P384', nowSeconds());
    expect(claimed?.keyId).toBe(key.keyId);
    // Replay the delete a redelivered message would do: nothing comes back.
    const again = await doc.send(
      new DeleteCommand({
        TableName: tableName,
        Key: { pk: shardPk('EC-P384', 0), sk: `${String(key.expiresAt).padStart(10, '0')}#${key.keyId}` },
        ReturnValues: 'ALL_OLD',
      }),
    );
    expect(again.Attributes).toBeUndefined();
    expect(await pool.claim('EC-P384', nowSeconds())).toBeUndefined();
    // Its counter decrement is written now, not by the timer a second later in another test.
    await pool.flushClaimCounters();
  });

  test('expired keys are never handed out, and removeExpired deletes them and fixes the counters', async () => {
    const keyType: KeyType = 'RSA-4096';
    const pool = new KeyPoolRepository(doc, { tableName, shards: 3 });
    const now = nowSeconds();
    const expired = [
      ...Array.from({ length: 7 }, () => fakeKey(keyType, now - 10)),
      fakeKey(keyType, now), // expires this very second: unusable
    ];
    await pool.add([...expired, fakeKey(keyType, now + 600)]);
    expect((await pool.available([keyType]))[keyType]).toBe(9);
    const first = await pool.claim(keyType, now);
    expect(first?.expiresAt).toBe(now + 600);
    expect(await pool.claim(keyType, now)).toBeUndefined();
    const removedIds: string[] = [];
    expect(await pool.removeExpired(keyType, now, (id) => removedIds.push(id))).toBe(8);
    expect(removedIds.sort()).toEqual(expired.map((k) => k.keyId).sort());
    expect((await pool.available([keyType]))[keyType]).toBe(0);
    expect(await storedKeys(keyType, 3)).toHaveLength(0);
  });
});

describe('bundles: several keys per item', () => {
  // A table of its own: no other test's keys meet these.
  let bundleTable: string;
  beforeAll(async () => {
    bundleTable = (await createTestTables(['keyPool'])).keyPool;
  });
  /** A document client of its own that counts the commands it sends by name, and deletes that returned an item. */
  function countingClient(counts: Map<string, number>): DynamoDBDocumentClient {
    const own = documentClient(config.aws);
    own.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? 'unknown';
        counts.set(name, (counts.get(name) ?? 0) + 1);
        const result = await next(args);
        const output = result.output as { Attributes?: unknown };
        if (name === 'DeleteItemCommand' && output.Attributes)
          counts.set('won', (counts.get('won') ?? 0) + 1);
        return result;
      },
      { step: 'initialize', name: 'countCommands' },
    );
    return own;
  }

  test('20 processes with 3 concurrent claims each take 200 bundled keys exactly once, one delete per bundle won', async () => {
    const keyType: KeyType = 'EC-P256';
    const shards = 3;
    const filler = new KeyPoolRepository(doc, { tableName: bundleTable, shards, bundleSize: 7 });
    const keys = Array.from({ length: 200 }, () => fakeKey(keyType, nowSeconds() + 600));
    expect(await filler.add(keys)).toEqual({
      written: 200,
      unwritten: 0,
      writtenKeyIds: keys.map((k) => k.keyId),
    });
    const bundles = await storedBundles(keyType, shards, bundleTable);
    // 28 bundles of 7 and one of 4, counted as 200 keys.
    expect(bundles.map((b) => b.keyCount).sort((a, b) => Number(a) - Number(b))).toEqual([
      4,
      ...Array(28).fill(7),
    ]);
    expect((await filler.available([keyType]))[keyType]).toBe(200);

    const counts = new Map<string, number>();
    const clients: DynamoDBDocumentClient[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const taken = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const client = countingClient(counts);
        clients.push(client);
        const own = new KeyPoolRepository(client, { tableName: bundleTable, shards });
        const mine: PoolKey[] = [];
        // Three claims at a time in each process, as a signer working on a batch does.
        await Promise.all(
          Array.from({ length: 3 }, async () => {
            for (;;) {
              inFlight++;
              maxInFlight = Math.max(maxInFlight, inFlight);
              const key = await own.claim(keyType, nowSeconds()).finally(() => inFlight--);
              if (!key) return;
              mine.push(key);
            }
          }),
        );
        expect(own.heldKeys(keyType)).toBe(0);
        await own.flushClaimCounters();
        return mine;
      }),
    );
    for (const client of clients) client.destroy();
    // The claims really overlapped, within and across processes.
    expect(maxInFlight).toBeGreaterThan(20);
    const all = taken.flat();
    expect(all).toHaveLength(200);
    expect(new Set(all.map((k) => k.keyId))).toEqual(new Set(keys.map((k) => k.keyId)));
    // The stored blobs came back with the right keys.
    const byId = new Map(keys.map((k) => [k.keyId, k]));
    for (const key of all) expect(key.wrappedKey).toEqual(byId.get(key.keyId)!.wrappedKey);
    // One won delete per bundle, never one per key (lost races, another process first, are the rest).
    expect(counts.get('won')).toBe(29);
    expect(await storedBundles(keyType, shards, bundleTable)).toHaveLength(0);
    expect((await filler.available([keyType]))[keyType]).toBe(0);
  });

  test('one process claiming 35 keys in bundles of 7 sends 5 deletes and 2 queries', async () => {
    const keyType: KeyType = 'RSA-3072';
    await new KeyPoolRepository(doc, { tableName: bundleTable, shards: 1, bundleSize: 7 }).add(
      Array.from({ length: 35 }, () => fakeKey(keyType, nowSeconds() + 600)),
    );
    const counts = new Map<string, number>();
    const client = countingClient(counts);
    const pool = new KeyPoolRepository(client, {
      tableName: bundleTable,
      shards: 1,
      counterFlushMs: 3_600_000,
    });
    const claimed = await Promise.all(Array.from({ length: 36 }, () => pool.claim(keyType, nowSeconds())));
    client.destroy();
    expect(new Set(claimed.filter((k) => k !== undefined).map((k) => k.keyId)).size).toBe(35);
    expect(claimed.filter((k) => k === undefined)).toHaveLength(1);
    // The first query finds the 5 bundles, the last finds the shard empty; no counter write yet.
    expect(Object.fromEntries(counts)).toEqual({ QueryCommand: 2, DeleteItemCommand: 5, won: 5 });
  });

  test('a held key that expires while held is dropped, never served', async () => {
    const keyType: KeyType = 'EC-P384';
    const pool = new KeyPoolRepository(doc, { tableName: bundleTable, shards: 1, bundleSize: 3 });
    const now = nowSeconds();
    // One bundle: its earliest expiry (now + 100) is the bundle's.
    await pool.add([fakeKey(keyType, now + 100), fakeKey(keyType, now + 50), fakeKey(keyType, now + 600)]);
    const first = await pool.claim(keyType, now);
    expect(first?.expiresAt).toBe(now + 100);
    expect(pool.heldKeys(keyType)).toBe(2);
    // At now + 60 the held key expiring at now + 50 is skipped; the one expiring at now + 600 is served.
    expect((await pool.claim(keyType, now + 60))?.expiresAt).toBe(now + 600);
    expect(await pool.claim(keyType, now + 60)).toBeUndefined();
  });

  test('removeExpired deletes expired bundles whole (a bundle expires with its earliest key) and reports each key', async () => {
    const keyType: KeyType = 'RSA-2048';
    const pool = new KeyPoolRepository(doc, { tableName: bundleTable, shards: 2, bundleSize: 4 });
    await pool.recount(keyType, nowSeconds());
    const before = (await pool.available([keyType]))[keyType];
    const now = nowSeconds();
    // Bundles of 4: [e e e e] [e e l l] [l l l]; the second goes with its expired keys.
    const expired = Array.from({ length: 6 }, () => fakeKey(keyType, now - 5));
    const live = Array.from({ length: 5 }, () => fakeKey(keyType, now + 600));
    await pool.add([...expired, ...live]);
    expect((await pool.available([keyType]))[keyType]).toBe(before + 11);
    const removed: string[] = [];
    expect(await pool.removeExpired(keyType, now, (id) => removed.push(id))).toBe(8);
    expect(removed.sort()).toEqual([...expired, ...live.slice(0, 2)].map((k) => k.keyId).sort());
    expect((await pool.available([keyType]))[keyType]).toBe(before + 3);
    expect(await pool.recount(keyType, now)).toBe(before + 3);
    expect((await pool.claim(keyType, now))?.keyId).toBe(live[2].keyId);
  });

  test('a bundle size outside 1..100 is refused', () => {
    expect(() => new KeyPoolRepository(doc, { tableName: bundleTable, shards: 1, bundleSize: 0 })).toThrow(
      RangeError,
    );
    expect(() => new KeyPoolRepository(doc, { tableName: bundleTable, shards: 1, bundleSize: 101 })).toThrow(
      RangeError,
    );
  });
});

describe('claim counters', () => {
  test('claims are subtracted from the shard counter in one write per flush, and the claimer sees its own at once', async () => {
    const keyType: KeyType = 'EC-P384';
    // A table of its own: a claim elsewhere in this file whose decrement its repository's timer writes
    // a second later (as the claim test's EC-P384 claim did, about a second before this test on a fast run)
    // would otherwise land on this shard's counter between the readings below.
    const table = (await createTestTables(['keyPool'])).keyPool;
    // Never flushed by time in this test: only flushClaimCounters() writes.
    const claimer = new KeyPoolRepository(doc, { tableName: table, shards: 1, counterFlushMs: 3_600_000 });
    const observer = new KeyPoolRepository(doc, { tableName: table, shards: 1 });
    await claimer.recount(keyType, nowSeconds());
    await claimer.add(Array.from({ length: 6 }, () => fakeKey(keyType, nowSeconds() + 600)));
    const before = (await observer.available([keyType]))[keyType];
    for (let i = 0; i < 4; i++) expect(await claimer.claim(keyType, nowSeconds())).toBeDefined();
    // The claiming process counts its unwritten claims; another one reads the stored counter.
    expect((await claimer.available([keyType]))[keyType]).toBe(before - 4);
    expect((await observer.available([keyType]))[keyType]).toBe(before);
    await claimer.flushClaimCounters();
    expect((await observer.available([keyType]))[keyType]).toBe(before - 4);
    expect((await claimer.available([keyType]))[keyType]).toBe(before - 4);
    expect(await claimer.recount(keyType, nowSeconds())).toBe(before - 4);
  });
});

describe('counter repair', () => {
  test('recount fixes a counter that drifted (an item deleted behind its back, as TTL does)', async () => {
    // A table of its own: no other test's keys or late counter writes meet this one's.
    const keyType: KeyType = 'RSA-3072';
    const table = (await createTestTables(['keyPool'])).keyPool;
    const pool = new KeyPoolRepository(doc, { tableName: table, shards: 1, candidates: 1 });
    const keys = Array.from({ length: 4 }, () => fakeKey(keyType, nowSeconds() + 600));
    await pool.add(keys);
    expect((await pool.available([keyType]))[keyType]).toBe(4);
    await doc.send(
      new DeleteCommand({
        TableName: table,
        Key: {
          pk: shardPk(keyType, 0),
          sk: `${String(keys[0].expiresAt).padStart(10, '0')}#${keys[0].keyId}`,
        },
      }),
    );
    expect((await pool.available([keyType]))[keyType]).toBe(4);
    expect(await pool.recount(keyType, nowSeconds())).toBe(3);
    expect((await pool.available([keyType]))[keyType]).toBe(3);
  });
});

describe('fill deadline', () => {
  test('stops generating at the deadline, stores every generated key whole, leaks nothing', async () => {
    const keyType: KeyType = 'RSA-2048';
    const pool = new KeyPoolRepository(doc, { tableName, shards: 2 });
    const objectsBefore = await hsm.countSessionObjects();
    const result = await fillPool(
      { hsm, pool, metrics: new InMemoryPoolMetrics() },
      {
        keyType,
        count: 1000,
        parallelism: 2,
        deadline: Date.now() + 700,
        wrapKeyLabel: config.hsm.wrapKeyLabel,
        hsmProfile: config.hsm.profile,
        maxAgeSeconds: 3600,
        batchSize: 3,
      },
    );
    expect(result.stoppedBy).toBe('deadline');
    expect(result.generated).toBeGreaterThan(0);
    expect(result.generated).toBeLessThan(1000);
    expect(result.stored).toBe(result.generated);
    expect(await hsm.countSessionObjects()).toBe(objectsBefore);
    const items = await storedKeys(keyType, 2);
    expect(items).toHaveLength(result.stored);
    expect((await pool.available([keyType]))[keyType]).toBe(result.stored);
  });
});

describe('prefetching claims', () => {
  test('each claim hands out a distinct key and claims the next in the background', async () => {
    const keyType: KeyType = 'EC-P256';
    const pool = new KeyPoolRepository(doc, { tableName, shards: 2 });
    const prefetcher = new PrefetchingKeyClaimer(pool);
    const keys = Array.from({ length: 3 }, () => fakeKey(keyType, nowSeconds() + 600));
    await pool.add(keys);
    const first = await prefetcher.claim(keyType, nowSeconds());
    expect(prefetcher.holds(keyType)).toBe(true);
    await prefetcher.settled();
    // One handed out, one held by the prefetcher (already deleted from the table), one left.
    expect((await pool.available([keyType]))[keyType]).toBe(1);
    const second = await prefetcher.claim(keyType, nowSeconds());
    const third = await prefetcher.claim(keyType, nowSeconds());
    expect(await prefetcher.claim(keyType, nowSeconds())).toBeUndefined();
    expect(prefetcher.holds(keyType)).toBe(false);
    expect(new Set([first, second, third].map((k) => k?.keyId))).toEqual(new Set(keys.map((k) => k.keyId)));
  });

  test('a held key that expired meanwhile is dropped, never used', async () => {
    const keyType: KeyType = 'EC-P384';
    const pool = new KeyPoolRepository(doc, { tableName, shards: 1 });
    const prefetcher = new PrefetchingKeyClaimer(pool);
    await pool.add([fakeKey(keyType, nowSeconds() + 600), fakeKey(keyType, nowSeconds() + 600)]);
    expect(await prefetcher.claim(keyType, nowSeconds())).toBeDefined();
    await prefetcher.settled();
    // An hour later the held key (and every other) is past its expiry.
    expect(await prefetcher.claim(keyType, nowSeconds() + 3600)).toBeUndefined();
  });
});

describe('write failures', () => {
  test('a table that cannot be written: nothing stored, nothing counted, no HSM object left', async () => {
    const missing = new KeyPoolRepository(doc, { tableName: `missing-${randomUUID()}`, shards: 2 });
    const objectsBefore = await hsm.countSessionObjects();
    const result = await fillPool(
      { hsm, pool: missing, metrics: new InMemoryPoolMetrics() },
      {
        keyType: 'EC-P256',
        count: 10,
        parallelism: 2,
        deadline: Date.now() + 60_000,
        wrapKeyLabel: config.hsm.wrapKeyLabel,
        hsmProfile: config.hsm.profile,
        maxAgeSeconds: 3600,
      },
    );
    expect(result).toMatchObject({ generated: 10, stored: 0, lost: 10 });
    expect(result.errorCodes).toEqual({ ResourceNotFoundException: 1 });
    expect(await hsm.countSessionObjects()).toBe(objectsBefore);
  });
});
