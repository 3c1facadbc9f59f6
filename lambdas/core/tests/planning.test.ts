import fc from 'fast-check';
import type { Forecast } from '../src/forecast';
import { HOUR_MS } from '../src/forecast';
import { PlanInputError, plan } from '../src/planning';

const START = Date.UTC(2024, 0, 1);

/** A forecast whose mean and upper are given directly (the planner does not care where they came from). */
function forecastOf(mean: readonly number[], upper: readonly number[] = mean): Forecast {
  return {
    start: START,
    bucketMs: HOUR_MS,
    horizonBuckets: mean.length,
    quantile: 0.95,
    keyTypes: { 'RSA-2048': { method: 'holt-winters', mean, upper, errorQuantile: 0, oneStepMae: 0 } },
  };
}

/** Independent forward computation: max over t of cumulative demand minus cumulative capacity, >= 0. */
function forwardFluidBound(demand: readonly number[], capacityKeys: readonly number[]): number {
  let worst = 0;
  let cumulative = 0;
  demand.forEach((d, t) => {
    cumulative += d - capacityKeys[t];
    worst = Math.max(worst, cumulative);
  });
  return worst;
}

describe('plan', () => {
  it('never plans fewer keys than the fluid bound (random forecasts, shares and depths)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(5000), { minLength: 1, maxLength: 72 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 72, maxLength: 72 }),
        fc.integer({ min: 1, max: 4 }),
        fc.double({ min: 0.01, max: 2, noNaN: true }),
        fc.nat(20000),
        (demand, share, hsms, rate, depth) => {
          const p = plan(
            forecastOf(demand),
            { hsmCount: hsms, keysPerSecondPerHsm: { 'RSA-2048': rate }, generationShare: share },
            { 'RSA-2048': depth },
          );
          const capacityKeys = demand.map((_, b) => (share[b] > 0 ? share[b] * hsms * rate * 3600 : 0));
          const bound = forwardFluidBound(demand, capacityKeys);
          const k = p.keyTypes['RSA-2048']!;
          expect(k.fluidBound).toBeCloseTo(bound, 3);
          expect(k.target).toBeGreaterThanOrEqual(bound - 1e-6);
          // A plan that leaves the pool short must say so.
          expect(k.shortfall > 1e-6).toBe(bound > depth + 1e-6);
          expect(p.warnings.some((w) => w.kind === 'peak-unreachable')).toBe(bound > depth + 1e-6);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('adds safety stock for the upper quantile', () => {
    const mean = [100, 100, 5000, 100];
    const upper = mean.map((m) => m * 1.2);
    const p = plan(forecastOf(mean, upper), { hsmCount: 1, keysPerSecondPerHsm: { 'RSA-2048': 0.5 } }, {});
    const k = p.keyTypes['RSA-2048']!;
    // 1,800 keys per bucket can be generated: the mean bound is 0, the target still holds this bucket (upper).
    expect(k.fluidBound).toBeCloseTo(forwardFluidBound(mean, [1800, 1800, 1800, 1800]), 6);
    expect(k.target).toBeGreaterThan(k.fluidBound);
    expect(k.safetyStock).toBeCloseTo(k.target - k.fluidBound, 0);
  });

  it('flags an infeasible peak with the extra HSMs that close the gap', () => {
    // 10 off-peak hours at 1 key/s per HSM (3,600 keys/hour/HSM), then a peak hour of 100,000 requests in
    // which generation is paused. One HSM makes 36,000 keys before the peak: 3 HSMs (108,000) are needed.
    const demand = [...Array(10).fill(0), 100_000, 0];
    const p = plan(
      forecastOf(demand),
      { hsmCount: 1, keysPerSecondPerHsm: { 'RSA-2048': 1 } },
      { 'RSA-2048': 0 },
      { pauseAtRequestsPerBucket: 50_000 },
    );
    expect(p.generationAllowed).toEqual([...Array(10).fill(true), false, true]);
    const warning = p.warnings.find((w) => w.kind === 'peak-unreachable')!;
    expect(warning.keyType).toBe('RSA-2048');
    expect(warning.extraHsms).toBe(2);
    expect(warning.peakBucket).toBe(10);
    expect(warning.peakAt).toBe(START + 10 * HOUR_MS);
    expect(warning.shortfall).toBeCloseTo(64_000, 6);
    // With 28,000 keys already stored one extra HSM is enough (28,000 + 72,000 = 100,000).
    const partly = plan(
      forecastOf(demand),
      { hsmCount: 1, keysPerSecondPerHsm: { 'RSA-2048': 1 } },
      { 'RSA-2048': 28_000 },
      { pauseAtRequestsPerBucket: 50_000 },
    );
    expect(partly.warnings[0].extraHsms).toBe(1);
  });

  it('pauses generation in configured peak hours and merges the allowed hours into windows', () => {
    const p = plan(
      forecastOf(Array(24).fill(10)),
      { hsmCount: 1, keysPerSecondPerHsm: { 'RSA-2048': 1 } },
      { 'RSA-2048': 0 },
      { pausedHoursOfDay: [10, 11] },
    );
    expect(p.generationWindows).toEqual([
      { start: START, end: START + 10 * HOUR_MS },
      { start: START + 12 * HOUR_MS, end: START + 24 * HOUR_MS },
    ]);
    expect(p.warnings).toEqual([]);
  });

  it('shares capacity between key types in HSM-seconds', () => {
    // RSA-2048 at 1 key/s, EC-P256 at 100 keys/s; one allowed hour then a paused peak needing 1,800 RSA
    // keys (1,800 s) and 180,000 EC keys (1,800 s): exactly one HSM-hour, so it fits; twice as much does not.
    const f = (scale: number): Forecast => ({
      ...forecastOf([0, 1800 * scale]),
      keyTypes: {
        'RSA-2048': forecastOf([0, 1800 * scale]).keyTypes['RSA-2048'],
        'EC-P256': { ...forecastOf([0, 180_000 * scale]).keyTypes['RSA-2048']! },
      },
    });
    const capacity = { hsmCount: 1, keysPerSecondPerHsm: { 'RSA-2048': 1, 'EC-P256': 100 } };
    const options = { pauseAtRequestsPerBucket: 1000 };
    expect(plan(f(1), capacity, {}, options).warnings).toEqual([]);
    const tight = plan(f(2), capacity, {}, options);
    expect(tight.warnings.map((w) => [w.keyType, w.extraHsms])).toEqual([
      ['RSA-2048', 1],
      ['EC-P256', 1],
    ]);
  });

  it('caps the target and says so', () => {
    const p = plan(
      forecastOf([0, 10_000]),
      { hsmCount: 1, keysPerSecondPerHsm: { 'RSA-2048': 1 } },
      { 'RSA-2048': 10_000 },
      { maxPoolSize: 5_000 },
    );
    expect(p.keyTypes['RSA-2048']!.target).toBe(5_000);
    expect(p.warnings.map((w) => w.kind)).toEqual(['target-capped']);
  });

  it('rejects a key type without a keygen rate', () => {
    expect(() => plan(forecastOf([1]), { hsmCount: 1, keysPerSecondPerHsm: {} }, {})).toThrow(PlanInputError);
  });
});
