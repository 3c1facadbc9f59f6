/** The keygen cycle with in-memory fakes: expiry, recount, decision, fills, rate, gauges. */
import {
  InMemoryPoolMetrics,
  runKeygenCycle,
  type KeyPoolStore,
  type KeygenCycleDeps,
  type KeygenDecision,
  type PoolKey,
} from '../src/pool';
import { KEY_TYPES, type KeyType } from '../src/shared';
import type { AuditEvent } from '../src/audit';
import { FakeHsm } from './fakes';

class MemoryPool implements KeyPoolStore {
  public keys: PoolKey[] = [];
  public recounted: KeyType[] = [];
  public async add(keys: readonly PoolKey[]) {
    this.keys.push(...keys);
    return { written: keys.length, unwritten: 0, writtenKeyIds: keys.map((k) => k.keyId) };
  }
  public async claim(): Promise<PoolKey | undefined> {
    return undefined;
  }
  public async available(keyTypes: readonly KeyType[]) {
    return Object.fromEntries(
      keyTypes.map((t) => [t, this.keys.filter((k) => k.keyType === t).length]),
    ) as Record<KeyType, number>;
  }
  public async removeExpired(keyType: KeyType, nowSeconds: number, onRemoved?: (keyId: string) => void) {
    const gone = this.keys.filter((k) => k.keyType === keyType && k.expiresAt <= nowSeconds);
    this.keys = this.keys.filter((k) => !gone.includes(k));
    for (const k of gone) onRemoved?.(k.keyId);
    return gone.length;
  }
  public async recount(keyType: KeyType): Promise<number> {
    this.recounted.push(keyType);
    return this.keys.filter((k) => k.keyType === keyType).length;
  }
}

const NOW = 1_700_000_000_000;

function setup(decision: Partial<KeygenDecision>) {
  const pool = new MemoryPool();
  const hsm = new FakeHsm();
  const metrics = new InMemoryPoolMetrics();
  const events: AuditEvent[] = [];
  const rates: Array<[KeyType, number]> = [];
  const logged: string[] = [];
  const generatedOrder: KeyType[] = [];
  const generate = hsm.generateKeyPair.bind(hsm);
  hsm.generateKeyPair = async (keyType) => {
    generatedOrder.push(keyType);
    return generate(keyType);
  };
  const deps: KeygenCycleDeps = {
    pool,
    hsm,
    metrics,
    audit: {
      append: async (e) => (await deps.audit.appendMany([e]))[0],
      appendMany: async (batch) => {
        events.push(...batch);
        return batch.map(() => ({ chain: 0, sequence: 0, hash: '', leafIndex: 0, treeSize: 1, path: [] }));
      },
    },
    decide: async () => ({
      policy: 'targets',
      targets: {},
      generationAllowed: true,
      lowWater: {},
      warnings: [],
      ...decision,
    }),
    observeRate: async (keyType, generated) => void rates.push([keyType, generated]),
    log: {
      info: (m) => logged.push(`info ${m}`),
      warn: (m) => logged.push(`warn ${m}`),
      error: (m) => logged.push(`error ${m}`),
    },
    clock: () => NOW,
  };
  const input = {
    deadline: NOW + 60_000,
    wrapKeyLabel: 'wrap-v1',
    hsmProfile: 'softhsm',
    maxAgeSeconds: 3600,
    fillParallelism: 2,
  };
  return { deps, input, pool, hsm, metrics, events, rates, logged, generatedOrder };
}

function stored(keyType: KeyType, n: number, expiresAt: number): PoolKey[] {
  return Array.from({ length: n }, (_, i) => ({
    keyId: `${keyType}-${expiresAt}-${i}`,
    keyType,
    wrappedKey: Buffer.from('w'),
    publicKeySpki: Buffer.from('p'),
    wrapKeyLabel: 'wrap-v1',
    hsmProfile: 'softhsm',
    createdAt: 0,
    expiresAt,
  }));
}

test('removes and audits expired keys, recounts, fills each deficit cheapest type first, and reports', async () => {
  const t = setup({ targets: { 'RSA-2048': 3, 'EC-P256': 4 }, warnings: ['peak ahead'] });
  t.pool.keys.push(...stored('EC-P256', 2, NOW / 1000 - 1), ...stored('EC-P256', 1, NOW / 1000 + 600));
  const result = await runKeygenCycle(t.deps, t.input);
  expect(result).toMatchObject({
    expiredRemoved: 2,
    generated: { 'EC-P256': 3, 'RSA-2048': 3 },
    available: { 'EC-P256': 4, 'RSA-2048': 3 },
  });
  expect(
    t.events.filter((e) => e.type === 'pool.key-discarded').map((e) => (e as { reason: string }).reason),
  ).toEqual(['expired', 'expired']);
  expect(t.pool.recounted).toEqual([...KEY_TYPES]);
  // EC keys first: the slow RSA generation never starves them.
  expect(t.generatedOrder.indexOf('EC-P256')).toBeLessThan(t.generatedOrder.indexOf('RSA-2048'));
  expect(t.rates.map(([k]) => k).sort()).toEqual(['EC-P256', 'RSA-2048']);
  const { gauges } = t.metrics.snapshot() as { gauges: Record<string, Record<string, number>> };
  expect(gauges.KeysAvailable['EC-P256']).toBe(4);
  expect(gauges.KeysTarget['RSA-2048']).toBe(3);
  expect(t.metrics.counter('ExpiredKeysRemoved', 'EC-P256')).toBe(2);
  expect(t.logged).toContain('warn capacity plan warning');
  expect(t.hsm.live.size).toBe(0);
});

test('outside the generation hours only the low-water mark is kept', async () => {
  const t = setup({ targets: { 'EC-P256': 10 }, lowWater: { 'EC-P256': 2 }, generationAllowed: false });
  const result = await runKeygenCycle(t.deps, t.input);
  expect(result.generated).toEqual({ 'EC-P256': 2 });
});

test('past the deadline nothing is generated', async () => {
  const t = setup({ targets: { 'EC-P256': 5 } });
  const result = await runKeygenCycle(t.deps, { ...t.input, deadline: NOW - 1 });
  expect(result.generated).toEqual({});
});
