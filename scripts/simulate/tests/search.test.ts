import { cached, minHsmsFor } from '../search';
import type { SimulationResult } from '../types';

/** A fake run whose p99 falls as HSMs are added: 10,000 / h^2 ms. */
function fake(h: number, abortAboveMs?: number): SimulationResult {
  const p99 = 10_000 / (h * h);
  const aborted = abortAboveMs !== undefined && p99 > abortAboveMs;
  return { aborted, latency: { p99 } } as SimulationResult;
}

describe('minHsmsFor', () => {
  it.each([
    [3000, 1, 2],
    [300, 1, 6],
    [300, 4, 6],
    [300, 9, 6],
    [1, 1, null],
  ])('target %d ms from %d finds %s', (target, from, expected) => {
    const calls: number[] = [];
    const run = cached((h, abort) => {
      calls.push(h);
      return fake(h, abort);
    });
    expect(minHsmsFor(target, run, 64, from)).toBe(expected);
    // Memoised: no count is simulated twice.
    expect(new Set(calls).size).toBe(calls.length);
  });
});
