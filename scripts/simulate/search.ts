import type { SimulationResult } from './types';

/**
 * Smallest HSM count whose overall p99 latency meets `targetMs`, assuming more HSMs never hurt: doubling
 * until one passes, then bisection. Runs are cached by HSM count and shared between targets.
 * Returns null when even `maxHsms` fails.
 */
export function minHsmsFor(
  targetMs: number,
  run: (hsms: number) => SimulationResult,
  maxHsms: number,
): number | null {
  const meets = (h: number): boolean => run(h).latency.p99 <= targetMs;
  let low = 0;
  let high = 1;
  while (!meets(high)) {
    if (high >= maxHsms) return null;
    low = high;
    high = Math.min(maxHsms, high * 2);
  }
  while (high - low > 1) {
    const mid = (low + high) >> 1;
    if (meets(mid)) high = mid;
    else low = mid;
  }
  return high;
}

/** Memoises a simulation by HSM count. */
export function cached(run: (hsms: number) => SimulationResult): (hsms: number) => SimulationResult {
  const results = new Map<number, SimulationResult>();
  return (h) => {
    let r = results.get(h);
    if (!r) {
      r = run(h);
      results.set(h, r);
    }
    return r;
  };
}
