import type { SimulationResult } from './types';

/** Runs the simulation with `hsms` HSMs; `abortAboveMs` lets it stop once that target's p99 has failed. */
export type Runner = (hsms: number, abortAboveMs?: number) => SimulationResult;

const meets = (r: SimulationResult, targetMs: number): boolean => !r.aborted && r.latency.p99 <= targetMs;

/**
 * Smallest HSM count whose overall p99 latency meets `targetMs`, assuming more HSMs never hurt. Starts at
 * `from` (a lower bound from arithmetic, e.g. peak rate x service time / sessions), checks one below it,
 * then doubles until a count passes and bisects. Returns null when even `maxHsms` fails.
 */
export function minHsmsFor(targetMs: number, run: Runner, maxHsms: number, from = 1): number | null {
  const ok = (h: number): boolean => meets(run(h, targetMs), targetMs);
  let high = Math.max(1, Math.min(from, maxHsms));
  if (ok(high)) {
    // The bound is only arithmetic: walk down while smaller counts still pass.
    while (high > 1 && ok(high - 1)) high--;
    return high;
  }
  let low = high;
  while (!ok(high)) {
    if (high >= maxHsms) return null;
    low = high;
    high = Math.min(maxHsms, high * 2);
  }
  while (high - low > 1) {
    const mid = (low + high) >> 1;
    if (ok(mid)) high = mid;
    else low = mid;
  }
  return high;
}

/**
 * Memoises runs by HSM count. A complete run answers every target; an aborted one only says "fails" for
 * targets at or below the one it was aborted for.
 */
export function cached(simulate: (hsms: number, abortAboveMs?: number) => SimulationResult): Runner {
  const complete = new Map<number, SimulationResult>();
  const failed = new Map<number, { result: SimulationResult; targetMs: number }>();
  return (h, abortAboveMs) => {
    const full = complete.get(h);
    if (full) return full;
    const f = failed.get(h);
    if (f && abortAboveMs !== undefined && abortAboveMs <= f.targetMs) return f.result;
    const r = simulate(h, abortAboveMs);
    if (r.aborted) failed.set(h, { result: r, targetMs: abortAboveMs ?? Infinity });
    else complete.set(h, r);
    return r;
  };
}
