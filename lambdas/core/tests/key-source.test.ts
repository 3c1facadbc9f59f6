import { FallbackLimiter, keySourceFor, type PoolKey } from '../src/pool';
import type { KeyType } from '../src/shared';
import { poolKey } from './fakes';

/** A pool of keys per type, claimed in order; claims are recorded with their time. */
function pool(keys: PoolKey[]) {
  const claims: number[] = [];
  return {
    claims,
    claim: async (keyType: KeyType, nowSeconds: number) => {
      claims.push(nowSeconds);
      const i = keys.findIndex((k) => k.keyType === keyType);
      return i < 0 ? undefined : keys.splice(i, 1)[0];
    },
  };
}

const clock = () => 1_700_000_000_500;

test('the pool first: a claimed key, claimed as of the clock second', async () => {
  const store = pool([poolKey(1)]);
  const source = keySourceFor({ pool: store, policy: 'reject', clock });
  await expect(source.next('EC-P256')).resolves.toEqual({ kind: 'pooled', key: poolKey(1) });
  expect(store.claims).toEqual([1_700_000_000]);
});

test('reject: an empty pool refuses', async () => {
  const source = keySourceFor({ pool: pool([]), policy: 'reject', clock });
  await expect(source.next('EC-P256')).resolves.toEqual({ kind: 'refused' });
});

test('fallback without a limiter: an empty pool means generate at once', async () => {
  const source = keySourceFor({ pool: pool([]), policy: 'fallback', clock });
  await expect(source.next('EC-P256')).resolves.toEqual({ kind: 'generate' });
});

test('fallback with a limiter: a slot to generate in, then refused when none is free', async () => {
  const limiter = new FallbackLimiter({ maxInFlight: 1, waitMs: 0, maxWaiting: 0 });
  const source = keySourceFor({ pool: pool([]), policy: 'fallback', limiter, clock });
  const first = await source.next('RSA-2048');
  expect(first.kind).toBe('generate');
  await expect(source.next('RSA-2048')).resolves.toEqual({
    kind: 'refused',
    reason: 'no on-the-fly generation was free',
  });
  if (first.kind === 'generate') first.release?.();
  expect((await source.next('RSA-2048')).kind).toBe('generate');
});
