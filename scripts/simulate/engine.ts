import { LatencyHistogram } from './histogram';
import { keygenJobMs, onTheFlyServiceMs, pooledServiceMs } from './presets';
import type { HsmTimings, Policy, SimulationResult, Workload } from './types';

/** Local constant: imported bindings are getter calls on the hot path under CommonJS. */
export const HOUR_MS = 3_600_000;

export interface EngineConfig {
  readonly timings: HsmTimings;
  readonly hsmCount: number;
  readonly workload: Workload;
  readonly policy: Policy;
  /** Keys in the pool at time 0; default the policy's steady state, else the workload's. */
  readonly initialPool?: number;
  /** Step of the chart series; default 5 minutes. */
  readonly seriesStepMs?: number;
  /** Keep per-request arrival/start/finish times (tests; memory grows with the request count). */
  readonly trace?: boolean;
  /**
   * Stop early once more than `maxOver` requests took longer than `targetMs`: the p99 has failed and the
   * rest of the run cannot change that (used by the HSM-count search). The result is marked aborted.
   */
  readonly abort?: { readonly targetMs: number; readonly maxOver: number };
}

/**
 * Discrete-event simulation of the signing service. Requests are served FIFO by `hsmCount x sessions`
 * identical workers; each request starts on the earliest free worker (exact for a FIFO multi-server
 * queue, Kiefer-Wolfowitz), so the queue needs no event list and a week of ~12 M requests runs in
 * seconds. A request takes a pooled key when the pool has one (DB load + unwrap + sign), else it
 * generates on the fly (keygen + sign): a pool miss.
 *
 * Key generation runs in hourly slots: the policy reserves sessions for it at the start of each hour.
 * A reserved session takes no request in that hour and, being non-preemptive, finishes its last keygen
 * job after the hour ends. Generated keys enter the pool as a fluid (rate sessions / job time) until the
 * policy's target is reached; that approximation only smooths keys landing every ~0.1-0.8 s.
 */
export function simulate(config: EngineConfig): SimulationResult {
  const { timings, workload, policy } = config;
  const workers = Math.max(1, Math.round(config.hsmCount * timings.sessionsPerHsm));
  const pooledMs = pooledServiceMs(timings);
  const missMs = onTheFlyServiceMs(timings);
  const jobMs = keygenJobMs(timings);
  // A session reserved for the whole hour runs jobs back to back from the hour's start.
  const tailMs = (jobMs - (HOUR_MS % jobMs)) % jobMs;
  const hours = Math.ceil(workload.durationMs / HOUR_MS);
  const observed = new Float64Array(hours + 1);
  const stepMs = config.seriesStepMs ?? 300_000;
  const steps = Math.ceil(workload.durationMs / stepMs) + 1;
  const seriesArrivals = new Float64Array(steps);
  const seriesPool = new Float64Array(steps).fill(NaN);
  const seriesMaxLatency = new Float64Array(steps);

  // Workers in a binary min-heap on their free time.
  const freeAt = new Float64Array(workers);
  const heap = Int32Array.from({ length: workers }, (_, i) => i);
  const siftDown = (from: number): void => {
    let i = from;
    const w = heap[i];
    const key = freeAt[w];
    for (;;) {
      const l = 2 * i + 1;
      if (l >= workers) break;
      const r = l + 1;
      const c = r < workers && freeAt[heap[r]] < freeAt[heap[l]] ? r : l;
      if (freeAt[heap[c]] >= key) break;
      heap[i] = heap[c];
      i = c;
    }
    heap[i] = w;
  };
  const rebuild = (): void => {
    for (let i = (workers >> 1) - 1; i >= 0; i--) siftDown(i);
  };

  const peak = new LatencyHistogram();
  const normal = new LatencyHistogram();
  let over300 = 0;
  let over3000 = 0;
  let misses = 0;
  let busyMs = 0;
  let lastFinish = 0;

  let pool = policy.usesPool ? (config.initialPool ?? policy.initialPool ?? workload.initialPool) : 0;
  let poolT = 0;
  let poolArea = 0;
  let peakPool = pool;
  let generated = 0;
  let reserved = 0;
  let target = 0;
  let slot = -1;
  let slotEnd = 0;

  const advancePool = (t: number): void => {
    const dt = t - poolT;
    if (dt <= 0) return;
    const before = pool;
    if (reserved > 0 && pool < target) {
      const add = Math.min((dt * reserved) / jobMs, target - pool);
      pool += add;
      generated += add;
    }
    poolArea += ((before + pool) / 2) * dt;
    if (pool > peakPool) peakPool = pool;
    poolT = t;
  };

  const openSlot = (next: number): void => {
    const start = next * HOUR_MS;
    if (reserved > 0) {
      // Sessions that generated in the last hour finish their job in flight before taking requests.
      for (let w = 0; w < reserved; w++) if (freeAt[w] < start + tailMs) freeAt[w] = start + tailMs;
    }
    slot = next;
    slotEnd = start + HOUR_MS;
    if (!policy.usesPool) {
      reserved = 0;
    } else {
      const decision = policy.decide({
        slot,
        pool,
        hsmCount: config.hsmCount,
        workers,
        timings,
        workload,
        observed,
      });
      // At least one session always serves requests.
      reserved = Math.max(0, Math.min(workers - 1, Math.floor(decision.keygenSessions)));
      target = decision.target;
    }
    rebuild();
    const step = Math.floor(start / stepMs);
    if (step < steps) seriesPool[step] = pool;
  };

  const all = (): LatencyHistogram => LatencyHistogram.merge(peak, normal);
  const peakHours = workload.peakHours;
  const usesPool = policy.usesPool;
  const abortMs = config.abort?.targetMs ?? Infinity;
  const abortOver = config.abort?.maxOver ?? Infinity;
  let overAbort = 0;
  let aborted = false;
  const trace = config.trace
    ? { arrival: [] as number[], start: [] as number[], finish: [] as number[] }
    : null;
  const next = workload.arrivals();
  openSlot(0);
  for (let a = next(); a >= 0; a = next()) {
    while (a >= slotEnd) {
      advancePool(slotEnd);
      openSlot(slot + 1);
    }
    advancePool(a);
    observed[slot]++;
    let service = missMs;
    if (usesPool) {
      if (pool >= 1) {
        pool -= 1;
        service = pooledMs;
      } else {
        misses++;
      }
    }
    // Earliest free worker that is not reserved for keygen in this hour.
    let w = heap[0];
    while (w < reserved && freeAt[w] < slotEnd) {
      freeAt[w] = slotEnd + tailMs;
      siftDown(0);
      w = heap[0];
    }
    const start = freeAt[w] > a ? freeAt[w] : a;
    const finish = start + service;
    freeAt[w] = finish;
    siftDown(0);
    busyMs += service;
    if (finish > lastFinish) lastFinish = finish;

    const latency = finish - a;
    if (peakHours[slot]) peak.add(latency);
    else normal.add(latency);
    if (latency > 300) over300++;
    if (latency > 3000) over3000++;
    if (latency > abortMs && ++overAbort > abortOver) {
      aborted = true;
      break;
    }
    const step = Math.floor(a / stepMs);
    seriesArrivals[step]++;
    if (latency > seriesMaxLatency[step]) seriesMaxLatency[step] = latency;
    seriesPool[step] = pool;
    if (trace) {
      trace.arrival.push(a);
      trace.start.push(start);
      trace.finish.push(finish);
    }
  }
  // Let generation run to the end of the workload's time (it matters for stored-key figures).
  while (!aborted && slotEnd < workload.durationMs) {
    advancePool(slotEnd);
    openSlot(slot + 1);
  }
  advancePool(Math.max(poolT, workload.durationMs));
  for (let s = 1; s < steps; s++) if (Number.isNaN(seriesPool[s])) seriesPool[s] = seriesPool[s - 1];

  const simulatedMs = Math.max(workload.durationMs, lastFinish);
  const latency = all().summary();
  return {
    policy: policy.name,
    aborted,
    hsmCount: config.hsmCount,
    workers,
    served: latency.count,
    latency,
    peakLatency: peak.summary(),
    normalLatency: normal.summary(),
    over300,
    over3000,
    poolMisses: misses,
    keysGenerated: generated,
    peakStoredKeys: peakPool,
    meanStoredKeys: poolT > 0 ? poolArea / poolT : pool,
    busyFraction: (busyMs + generated * jobMs) / (workers * simulatedMs),
    simulatedMs,
    series: { stepMs, arrivals: seriesArrivals, pool: seriesPool, maxLatency: seriesMaxLatency },
    trace: trace
      ? {
          arrival: Float64Array.from(trace.arrival),
          start: Float64Array.from(trace.start),
          finish: Float64Array.from(trace.finish),
        }
      : undefined,
  };
}
