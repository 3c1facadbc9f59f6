import { simulate } from '../engine';
import { LatencyHistogram } from '../histogram';
import { fillToMaximum, noPool } from '../policies';
import type { HsmTimings, Policy, SimulationResult } from '../types';
import { constantWorkload, poissonArrivals, studyRamp, taxWeek } from '../workloads';

/** One session per HSM, every request costs exactly `serviceMs` (on-the-fly keygen, sign free). */
function timings(serviceMs: number, sessionsPerHsm = 1): HsmTimings {
  return {
    name: 'test',
    keygenMs: serviceMs,
    unwrapMs: serviceMs / 10,
    signMs: 0,
    dbLoadMs: 0,
    wrapSaveMs: 0,
    sessionsPerHsm,
    source: 'test',
  };
}

/** Requests waiting (arrived, not started) at time t, from the trace: an oracle outside the engine. */
function queueAt(r: SimulationResult, t: number): number {
  const { arrival, start } = r.trace!;
  let arrived = 0;
  let started = 0;
  for (let i = 0; i < arrival.length; i++) {
    if (arrival[i] <= t) arrived++;
    if (start[i] <= t) started++;
  }
  return arrived - started;
}

describe('simulate: queueing arithmetic', () => {
  it('grows the queue at (arrival - service) per second with one worker, and the last request waits queue x service', () => {
    // 20 requests/s against 10/s of service for 200 s.
    const r = simulate({
      timings: timings(100),
      hsmCount: 1,
      workload: constantWorkload(20, 200),
      policy: noPool(),
      trace: true,
    });
    for (const t of [50_000, 100_000, 199_000]) {
      const expected = (20 - 10) * (t / 1000);
      expect(Math.abs(queueAt(r, t) - expected) / expected).toBeLessThan(0.02);
    }
    const last = r.served - 1;
    const { arrival, start } = r.trace!;
    const waiting = queueAt(r, arrival[last]) - 1; // the requests ahead of the last one
    const wait = start[last] - arrival[last];
    expect(Math.abs(wait - waiting * 100) / (waiting * 100)).toBeLessThan(0.02);
    // And the arithmetic itself: (20 - 10) * 200 s ahead, 100 ms each: about 200 s of waiting.
    expect(Math.abs(wait - 200_000) / 200_000).toBeLessThan(0.02);
  });

  it('serves with all workers of all HSMs: 55/s against 3 HSMs x 2 sessions x 10/s stays short, 80/s grows 20', () => {
    const steady = simulate({
      timings: timings(100, 2),
      hsmCount: 3,
      workload: constantWorkload(55, 100),
      policy: noPool(),
      trace: true,
    });
    expect(queueAt(steady, 90_000)).toBeLessThanOrEqual(6);
    const over = simulate({
      timings: timings(100, 2),
      hsmCount: 3,
      workload: constantWorkload(80, 100),
      policy: noPool(),
      trace: true,
    });
    expect(Math.abs(queueAt(over, 90_000) - 20 * 90) / (20 * 90)).toBeLessThan(0.02);
  });

  it('matches the M/D/1 mean wait rho / (2 mu (1 - rho)) for Poisson arrivals within 3%', () => {
    // lambda = 6/s, service 100 ms: rho = 0.6, mean wait = 0.6 / (2 * 10 * 0.4) = 75 ms.
    const hours = 6;
    const workload = {
      ...constantWorkload(6, hours * 3600),
      arrivals: poissonArrivals(new Float64Array(hours).fill(6), 42),
    };
    const r = simulate({ timings: timings(100), hsmCount: 1, workload, policy: noPool() });
    const meanWait = r.latency.mean - 100;
    expect(Math.abs(meanWait - 75) / 75).toBeLessThan(0.03);
    expect(Math.abs(r.busyFraction - 0.6)).toBeLessThan(0.01);
  });
});

describe('simulate: the pool', () => {
  /** Never generates: only the initial pool. */
  const frozen: Policy = {
    name: 'fill-max',
    usesPool: true,
    decide: () => ({ keygenSessions: 0, target: 0 }),
  };

  it('counts a miss for every request after the pool runs dry, and serves those on the fly', () => {
    const r = simulate({
      timings: timings(100, 4),
      hsmCount: 1,
      workload: constantWorkload(1, 150),
      policy: frozen,
      initialPool: 100,
    });
    expect(r.poolMisses).toBe(50);
    expect(r.peakStoredKeys).toBe(100);
    // 100 pooled requests at 10 ms, 50 on the fly at 100 ms, no queueing at 1/s.
    expect(r.latency.mean).toBeCloseTo((100 * 10 + 50 * 100) / 150, 6);
  });

  it('generates with reserved sessions at sessions / job time, up to the target', () => {
    // 2 of 4 sessions generate 1 key per 100 ms each: 20 keys/s, 72,000 in the hour, capped at 50,000.
    const generating: Policy = {
      name: 'fill-max',
      usesPool: true,
      decide: () => ({ keygenSessions: 2, target: 50_000 }),
    };
    const short = simulate({
      timings: timings(100, 4),
      hsmCount: 1,
      workload: constantWorkload(0.001, 1000),
      policy: generating,
      initialPool: 0,
    });
    expect(short.keysGenerated).toBeCloseTo(20 * 1000, 0);
    const long = simulate({
      timings: timings(100, 4),
      hsmCount: 1,
      workload: constantWorkload(0.001, 3600),
      policy: generating,
      initialPool: 0,
    });
    expect(long.peakStoredKeys).toBeCloseTo(50_000, 6);
  });

  it('keeps requests off reserved sessions: 3 of 4 reserved leaves 10/s of service', () => {
    const reserving: Policy = {
      name: 'fill-max',
      usesPool: true,
      decide: () => ({ keygenSessions: 3, target: 1e12 }),
    };
    // Pooled requests take 10 ms (unwrap); with one free session 100/s can be served; 150/s queues at 50/s.
    const r = simulate({
      timings: timings(100, 4),
      hsmCount: 1,
      workload: constantWorkload(150, 60),
      policy: reserving,
      initialPool: 1e6,
      trace: true,
    });
    expect(Math.abs(queueAt(r, 50_000) - 50 * 50) / (50 * 50)).toBeLessThan(0.02);
  });
});

describe('workloads', () => {
  it('builds the study ramp: 2,200 requests in 22 blocks of 100', () => {
    const w = studyRamp();
    const next = w.arrivals();
    const times: number[] = [];
    for (let t = next(); t >= 0; t = next()) times.push(t);
    expect(times).toHaveLength(2200);
    expect(times[100] - times[99]).toBe(1000);
    expect(times[1450] - times[1449]).toBe(10); // block 15: the fastest, 100/s
  });

  it('gives the tax-deadline week 11.97 M expected requests and flags its two busiest hours a day', () => {
    const w = taxWeek({ leadInDays: 0 });
    const expected = w.hourlyRates.reduce((a, r) => a + r * 3600, 0);
    expect(expected).toBeCloseTo(7 * (2 * 50 + 8 * 25 + 14 * 12.5) * 3600, 0);
    expect(w.peakHours.reduce((a, b) => a + b, 0)).toBe(14);
  });

  it('is deterministic for a seed', () => {
    const run = (): number => {
      const next = taxWeek({ leadInDays: 0, seed: 9 }).arrivals();
      let sum = 0;
      for (let i = 0; i < 1000; i++) sum += next();
      return sum;
    };
    expect(run()).toBe(run());
  });
});

describe('LatencyHistogram', () => {
  it('reports percentiles within a bin of the exact ones', () => {
    const h = new LatencyHistogram();
    const values = Array.from({ length: 10_000 }, (_, i) => 1 + ((i * 7919) % 10_000) / 2);
    values.forEach((v) => h.add(v));
    const sorted = [...values].sort((a, b) => a - b);
    expect(Math.abs(h.percentile(99) - sorted[9899])).toBeLessThanOrEqual(10);
    expect(h.summary().max).toBe(sorted[9999]);
  });
});

describe('fill-to-maximum', () => {
  it('starts full and generates only below its maximum', () => {
    const r = simulate({
      timings: timings(100, 4),
      hsmCount: 1,
      workload: constantWorkload(1, 100),
      policy: fillToMaximum({ maxPool: 1000, sessionShare: 0.5 }),
    });
    expect(r.poolMisses).toBe(0);
    expect(r.peakStoredKeys).toBeCloseTo(1000, 6);
  });
});

describe('LatencyHistogram ranges', () => {
  it('keeps percentiles of multi-day latencies within a minute', () => {
    const h = new LatencyHistogram();
    for (let i = 1; i <= 100; i++) h.add(i * 3_600_000); // 1 h .. 100 h
    expect(Math.abs(h.percentile(50) - 50 * 3_600_000)).toBeLessThanOrEqual(60_000);
    expect(Math.abs(h.percentile(1) - 3_600_000)).toBeLessThanOrEqual(10_000); // 10-s bins below ~28 h
  });
});
