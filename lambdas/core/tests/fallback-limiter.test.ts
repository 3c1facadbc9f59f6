/**
 * The bound on on-the-fly generation, on fake time: slots per key type, a bounded queue of waiters served
 * in order, the pool looked at again while waiting, refusal when the wait is over or the queue full, and
 * no slot ever lost or doubled.
 */
import { FallbackLimiter, type FallbackDecision } from '../src/pool';
import { FakeTime, settle } from './fakes';

function limiter(time: FakeTime, maxInFlight = 1, waitMs = 2000, maxWaiting = 10): FallbackLimiter {
  return new FallbackLimiter({
    maxInFlight,
    waitMs,
    maxWaiting,
    reclaimEveryMs: 500,
    clock: time.clock,
    timer: time.timer,
  });
}

const nothing = async (): Promise<string | undefined> => undefined;

/** Starts an acquire and exposes its answer once it has one. */
function pending<K>(promise: Promise<FallbackDecision<K>>): { result?: FallbackDecision<K> } {
  const box: { result?: FallbackDecision<K> } = {};
  void promise.then((r) => (box.result = r));
  return box;
}

test('up to maxInFlight slots per key type at once; other key types are not affected', async () => {
  const time = new FakeTime();
  const l = limiter(time, 2);
  const a = await l.acquire('RSA-2048', nothing);
  const b = await l.acquire('RSA-2048', nothing);
  expect([a.kind, b.kind]).toEqual(['slot', 'slot']);
  expect(l.inFlight('RSA-2048')).toBe(2);
  const third = pending(l.acquire('RSA-2048', nothing));
  await settle();
  expect(third.result).toBeUndefined();
  expect(l.waiting('RSA-2048')).toBe(1);
  expect((await l.acquire('EC-P256', nothing)).kind).toBe('slot');
  await time.advance(2000);
  expect(third.result).toEqual({ kind: 'refused' });
  expect(l.waiting('RSA-2048')).toBe(0);
});

test('a freed slot goes to the longest waiter, not to a newcomer; the count never overshoots', async () => {
  const time = new FakeTime();
  const l = limiter(time, 1);
  const first = await l.acquire('RSA-2048', nothing);
  const second = pending(l.acquire('RSA-2048', nothing));
  await time.advance(100);
  const third = pending(l.acquire('RSA-2048', nothing));
  await settle();
  if (first.kind !== 'slot') throw new Error('expected a slot');
  first.release();
  first.release(); // a second release of the same slot changes nothing
  await settle();
  expect(second.result?.kind).toBe('slot');
  expect(third.result).toBeUndefined();
  expect(l.inFlight('RSA-2048')).toBe(1);
  // A newcomer queues behind the waiter.
  const fourth = pending(l.acquire('RSA-2048', nothing));
  await settle();
  expect(fourth.result).toBeUndefined();
  if (second.result?.kind !== 'slot') throw new Error('expected a slot');
  second.result.release();
  await settle();
  expect(third.result?.kind).toBe('slot');
  expect(fourth.result).toBeUndefined();
  if (third.result?.kind !== 'slot') throw new Error('expected a slot');
  third.result.release();
  await settle();
  if (fourth.result?.kind !== 'slot') throw new Error('expected a slot');
  fourth.result.release();
  expect([l.inFlight('RSA-2048'), l.waiting('RSA-2048')]).toEqual([0, 0]);
});

test('a waiter looks in the pool every reclaimEveryMs, once more at the end, then is refused', async () => {
  const time = new FakeTime();
  const l = limiter(time, 1, 2000);
  await l.acquire('RSA-2048', nothing);
  const looked: number[] = [];
  const waiter = pending(
    l.acquire('RSA-2048', async () => {
      looked.push(time.now);
      return undefined;
    }),
  );
  await time.advance(1999);
  expect(waiter.result).toBeUndefined();
  await time.advance(1);
  expect(looked).toEqual([500, 1000, 1500, 2000]);
  expect(waiter.result).toEqual({ kind: 'refused' });
});

test('a pool key found while waiting ends the wait and takes no slot', async () => {
  const time = new FakeTime();
  const l = limiter(time, 1);
  await l.acquire('RSA-2048', nothing);
  const stored: string[] = [];
  const waiter = pending(l.acquire('RSA-2048', async () => stored.shift()));
  await time.advance(500);
  expect(waiter.result).toBeUndefined();
  stored.push('k1');
  await time.advance(500);
  expect(waiter.result).toEqual({ kind: 'key', key: 'k1' });
  expect([l.inFlight('RSA-2048'), l.waiting('RSA-2048')]).toEqual([1, 0]);
});

test('a slot handed over while the waiter was finding a key goes on to the next waiter', async () => {
  const time = new FakeTime();
  const l = limiter(time, 1);
  const first = await l.acquire('RSA-2048', nothing);
  if (first.kind !== 'slot') throw new Error('expected a slot');
  let finish!: (key: string) => void;
  const finding = pending(
    l.acquire('RSA-2048', () => new Promise<string | undefined>((resolve) => (finish = resolve))),
  );
  const next = pending(l.acquire('RSA-2048', nothing));
  await time.advance(500); // the first waiter is now looking in the pool
  first.release(); // ... and is handed the slot meanwhile
  finish('k7');
  await settle();
  expect(finding.result).toEqual({ kind: 'key', key: 'k7' });
  expect(next.result?.kind).toBe('slot');
  expect(l.inFlight('RSA-2048')).toBe(1);
});

test('the queue holds as many as may generate (by default): one more is refused at once', async () => {
  const time = new FakeTime();
  const l = new FallbackLimiter({ maxInFlight: 2, waitMs: 2000, clock: time.clock, timer: time.timer });
  await l.acquire('RSA-2048', nothing);
  await l.acquire('RSA-2048', nothing);
  const waiting = [pending(l.acquire('RSA-2048', nothing)), pending(l.acquire('RSA-2048', nothing))];
  await settle();
  expect(l.waiting('RSA-2048')).toBe(2);
  expect(await l.acquire('RSA-2048', nothing)).toEqual({ kind: 'refused' });
  expect(l.waiting('RSA-2048')).toBe(2);
  await time.advance(2000);
  expect(waiting.map((w) => w.result)).toEqual([{ kind: 'refused' }, { kind: 'refused' }]);
  expect(() => new FallbackLimiter({ maxInFlight: 1, maxWaiting: -1, waitMs: 1 })).toThrow(RangeError);
});

test('waitMs 0: refused at once when no slot is free, without waiting', async () => {
  const time = new FakeTime();
  const l = limiter(time, 1, 0);
  await l.acquire('RSA-2048', nothing);
  expect(await l.acquire('RSA-2048', nothing)).toEqual({ kind: 'refused' });
  expect(() => new FallbackLimiter({ maxInFlight: 0, waitMs: 1 })).toThrow(RangeError);
});

test("the budget is split between clients: a freed slot goes to the waiting client that holds the fewest, not to a flooder's older waiters", async () => {
  const time = new FakeTime();
  const l = limiter(time, 2, 10_000);
  const flood1 = await l.acquire('RSA-2048', nothing, 'flooder');
  const flood2 = await l.acquire('RSA-2048', nothing, 'flooder');
  const flood3 = pending(l.acquire('RSA-2048', nothing, 'flooder'));
  await time.advance(100);
  const other = pending(l.acquire('RSA-2048', nothing, 'other'));
  await settle();
  if (flood1.kind !== 'slot' || flood2.kind !== 'slot') throw new Error('expected slots');
  flood1.release();
  await settle();
  // The flooder still holds one slot, the other client none: the other's later waiter goes first.
  expect(other.result?.kind).toBe('slot');
  expect(flood3.result).toBeUndefined();
  flood2.release();
  await settle();
  expect(flood3.result?.kind).toBe('slot');
  expect(l.inFlight('RSA-2048')).toBe(2);
});

test('a last-chance request joins a full queue and waits its own, longer time for a slot', async () => {
  const time = new FakeTime();
  const l = limiter(time, 1, 2000, 1);
  const first = await l.acquire('RSA-2048', nothing);
  const waiting = pending(l.acquire('RSA-2048', nothing));
  await settle();
  expect((await l.acquire('RSA-2048', nothing)).kind).toBe('refused');
  const last = pending(l.acquire('RSA-2048', nothing, '', 8000));
  await time.advance(2000);
  expect(waiting.result).toEqual({ kind: 'refused' });
  expect(last.result).toBeUndefined();
  if (first.kind !== 'slot') throw new Error('expected a slot');
  await time.advance(3000);
  first.release();
  await settle();
  expect(last.result?.kind).toBe('slot');
});
