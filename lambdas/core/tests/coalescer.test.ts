import { Coalescer, type Settled } from '../src/shared';

/** A sender that records each batch and answers each item with its double (or an error for negatives). */
function recorder(): { batches: number[][]; send: (items: readonly number[]) => Promise<Settled<number>[]> } {
  const batches: number[][] = [];
  return {
    batches,
    send: async (items) => {
      batches.push([...items]);
      return items.map((n) =>
        n < 0 ? { ok: false, error: new Error(`negative ${n}`) } : { ok: true, value: 2 * n },
      );
    },
  };
}

afterEach(() => jest.useRealTimers());

test('a full batch goes at once; each caller gets its own answer', async () => {
  const { batches, send } = recorder();
  const coalescer = new Coalescer(send, { windowMs: 60_000, maxBatch: 3 });
  const answers = await Promise.allSettled([1, -2, 3].map((n) => coalescer.submit(n)));
  expect(batches).toEqual([[1, -2, 3]]);
  expect(answers[0]).toEqual({ status: 'fulfilled', value: 2 });
  expect(answers[1]).toMatchObject({ status: 'rejected', reason: new Error('negative -2') });
  expect(answers[2]).toEqual({ status: 'fulfilled', value: 6 });
});

test('a batch goes as soon as every caller that could join has submitted', async () => {
  const { batches, send } = recorder();
  let waiting = 2;
  const coalescer = new Coalescer(send, { windowMs: 60_000, maxBatch: 10, waiting: () => waiting });
  const first = coalescer.submit(1);
  expect(coalescer.queued).toBe(1);
  const second = coalescer.submit(2);
  expect(await Promise.all([first, second])).toEqual([2, 4]);
  waiting = 1;
  expect(await coalescer.submit(5)).toBe(10);
  expect(batches).toEqual([[1, 2], [5]]);
});

test('an incomplete batch goes when the window has passed', async () => {
  jest.useFakeTimers();
  const { batches, send } = recorder();
  const coalescer = new Coalescer(send, { windowMs: 25, maxBatch: 10, waiting: () => 5 });
  const answers = [coalescer.submit(1), coalescer.submit(2)];
  jest.advanceTimersByTime(24);
  expect(batches).toEqual([]);
  jest.advanceTimersByTime(1);
  expect(await Promise.all(answers)).toEqual([2, 4]);
  expect(batches).toEqual([[1, 2]]);
});

test('more than maxBatch at once are split; window 0 sends each alone', async () => {
  const { batches, send } = recorder();
  const split = new Coalescer(send, { windowMs: 10, maxBatch: 2, waiting: () => 5 });
  const answers = [1, 2, 3, 4, 5].map((n) => split.submit(n));
  expect(await Promise.all(answers)).toEqual([2, 4, 6, 8, 10]);
  expect(batches).toEqual([[1, 2], [3, 4], [5]]);
  batches.length = 0;
  const alone = new Coalescer(send, { windowMs: 0, maxBatch: 10 });
  await Promise.all([alone.submit(1), alone.submit(2)]);
  expect(batches).toEqual([[1], [2]]);
});

test('a failed send rejects every item of its batch, and a wrong answer count is a failure', async () => {
  const failing = new Coalescer<number, number>(async () => Promise.reject(new Error('down')), {
    windowMs: 0,
    maxBatch: 1,
  });
  await expect(failing.submit(1)).rejects.toThrow('down');
  const short = new Coalescer<number, number>(async () => [], { windowMs: 0, maxBatch: 1 });
  await expect(short.submit(1)).rejects.toThrow('answered 0 of 1');
  expect(() => new Coalescer(async () => [], { windowMs: 0, maxBatch: 0 })).toThrow(RangeError);
});
