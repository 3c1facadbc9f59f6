import {
  RequestInProgressError,
  deliverSignRequest,
  type RequestError,
  type SignOutcome,
} from '../src/signing';

const signed = { status: 'signed', replayed: false, record: {} } as unknown as SignOutcome;

function setup(results: Array<SignOutcome | Error>, remainingMs = 60_000) {
  const calls: string[] = [];
  const abandoned: RequestError[] = [];
  const slept: number[] = [];
  const unfinished: unknown[] = [];
  const deps = {
    process: async (id: string) => {
      calls.push(id);
      const next = results.shift()!;
      if (next instanceof Error) throw next;
      return next;
    },
    abandon: async (_id: string, error: RequestError) => {
      abandoned.push(error);
    },
    onUnfinished: (err: unknown) => unfinished.push(err),
    sleep: async (ms: number) => void slept.push(ms),
    clock: () => 42,
  };
  const delivery = (receiveCount: number) => ({
    requestId: 'r1',
    receiveCount,
    maxReceiveCount: 5,
    remainingTimeMs: () => remainingMs,
  });
  return { deps, delivery, calls, abandoned, slept, unfinished };
}

test('a delivery that finishes returns its outcome', async () => {
  const t = setup([signed]);
  expect(await deliverSignRequest(t.delivery(1), t.deps)).toBe(signed);
  expect(t.abandoned).toEqual([]);
});

test('before the last delivery a busy request is rethrown at once (the queue redelivers it)', async () => {
  const busy = new RequestInProgressError('r1', 5_000);
  const t = setup([busy]);
  await expect(deliverSignRequest(t.delivery(4), t.deps)).rejects.toBe(busy);
  expect(t.slept).toEqual([]);
  expect(t.abandoned).toEqual([]);
  expect(t.unfinished).toEqual([busy]);
});

test('the last delivery waits out a live lease when it has the time, and takes over once', async () => {
  const t = setup([new RequestInProgressError('r1', 5_000), signed], 60_000);
  expect(await deliverSignRequest(t.delivery(5), t.deps)).toBe(signed);
  expect(t.slept).toEqual([5_100]);
  expect(t.calls).toEqual(['r1', 'r1']);
  expect(t.abandoned).toEqual([]);
});

test('the last delivery without the time to wait ends the request DELIVERY_EXHAUSTED and rethrows', async () => {
  const busy = new RequestInProgressError('r1', 50_000);
  const t = setup([busy], 60_000);
  await expect(deliverSignRequest(t.delivery(5), t.deps)).rejects.toBe(busy);
  expect(t.slept).toEqual([]);
  expect(t.abandoned).toEqual([
    { code: 'DELIVERY_EXHAUSTED', message: 'not finished after 5 deliveries (RequestInProgressError)' },
  ]);
});

test('the last delivery whose takeover fails too is abandoned with that failure', async () => {
  const down = Object.assign(new Error('table down'), { name: 'ServiceUnavailable' });
  const t = setup([new RequestInProgressError('r1', 1_000), down]);
  await expect(deliverSignRequest(t.delivery(6), t.deps)).rejects.toBe(down);
  expect(t.abandoned[0].message).toBe('not finished after 6 deliveries (ServiceUnavailable)');
});

test('an abandon that fails does not hide the delivery failure', async () => {
  const down = new Error('table down');
  const t = setup([down]);
  t.deps.abandon = async () => Promise.reject(new Error('abandon failed'));
  await expect(deliverSignRequest(t.delivery(5), t.deps)).rejects.toBe(down);
});

test('before the last delivery a busy request holds its message until the lease ends (no receives spent on it)', async () => {
  const busy = new RequestInProgressError('r1', 42_300);
  const t = setup([busy]);
  const held: number[] = [];
  const delivery = { ...t.delivery(2), hold: async (ms: number) => void held.push(ms) };
  await expect(deliverSignRequest(delivery, t.deps)).rejects.toBe(busy);
  expect(held).toEqual([43_300]);
  expect(t.abandoned).toEqual([]);
});

test('a hold that fails does not hide the busy request (the visibility timeout brings it back)', async () => {
  const busy = new RequestInProgressError('r1', 5_000);
  const t = setup([busy]);
  const delivery = { ...t.delivery(1), hold: async () => Promise.reject(new Error('queue down')) };
  await expect(deliverSignRequest(delivery, t.deps)).rejects.toBe(busy);
});

test('the last delivery may wait for a key generation with its invocation time, less the margin', async () => {
  const t = setup([signed], 27_000);
  const seen: unknown[] = [];
  const process = t.deps.process;
  t.deps.process = async (id: string, options?: unknown) => (seen.push(options), process(id));
  await deliverSignRequest(t.delivery(5), t.deps);
  await deliverSignRequest(t.delivery(2), { ...t.deps, process: async (_id, o) => (seen.push(o), signed) });
  expect(seen).toEqual([{ lastDelivery: true, lastChanceWaitMs: 7_000 }, { lastDelivery: false }]);
});
