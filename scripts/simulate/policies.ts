import { HOUR_MS, forecast, type Forecast } from '@pipeline/core/forecast';
import { plan } from '@pipeline/core/planning';
import type { KeyType } from '@pipeline/core/shared';
import { keygenJobMs, pooledServiceMs } from './presets';
import type { Policy, SlotContext, SlotDecision } from './types';

const KEY_TYPE: KeyType = 'RSA-2048';

/** Keys one session generates in an hour of back-to-back jobs. */
const keysPerSessionHour = (c: SlotContext): number => HOUR_MS / keygenJobMs(c.timings);

/** Sessions needed to finish `deficit` keys this hour, at most `available`. */
function sessionsFor(deficit: number, available: number, c: SlotContext): number {
  if (deficit <= 0 || available <= 0) return 0;
  return Math.min(available, Math.ceil(deficit / keysPerSessionHour(c)));
}

/** On-the-fly keygen for every request: no pool at all. */
export function noPool(): Policy {
  return { name: 'no-pool', usesPool: false, decide: () => ({ keygenSessions: 0, target: 0 }) };
}

export interface FillMaxOptions {
  readonly maxPool: number;
  /** Fraction of the cluster's sessions the keygen function uses while the pool is below its maximum. */
  readonly sessionShare: number;
}

/**
 * Blind filling: generate with a fixed share of the sessions whenever the pool is below its maximum, at
 * any hour. It starts full: that is its steady state after a quiet period.
 */
export function fillToMaximum(options: FillMaxOptions): Policy {
  return {
    name: 'fill-max',
    usesPool: true,
    initialPool: options.maxPool,
    decide: (c): SlotDecision => ({
      keygenSessions: sessionsFor(options.maxPool - c.pool, Math.ceil(c.workers * options.sessionShare), c),
      target: options.maxPool,
    }),
  };
}

export interface ForecastPolicyOptions {
  /** Planning horizon in days: long enough to see a peak that takes days of generation; default 28. */
  readonly horizonDays: number;
  readonly maxPool: number;
  /** Request sessions are kept busy at most this much (forecast upper quantile); the rest may generate. */
  readonly maxUtilization: number;
  readonly quantile: number;
  /** Sessions always left to requests: one server alone has a long latency tail; default 2. */
  readonly minRequestSessions?: number;
}

/**
 * The product's policy: once a day forecast the demand (history + what was observed), every hour plan
 * with the current pool depth and generate with the sessions the forecast load leaves free, only in the
 * allowed hours, up to the plan's target.
 */
export function forecastDriven(options: ForecastPolicyOptions): Policy {
  let current: { forecast: Forecast; slot: number } | undefined;
  const horizon = options.horizonDays * 24;
  // Per warning kind: when the planner first saw it, and its worst plan (largest shortfall).
  const notes = new Map<string, { first: string; worst: string; shortfall: number }>();
  return {
    name: 'forecast',
    usesPool: true,
    notes: () => [...notes.values()].flatMap((n) => (n.first === n.worst ? [n.first] : [n.first, n.worst])),
    decide: (c): SlotDecision => {
      if (!current || c.slot % 24 === 0) {
        const history = [...c.workload.history, ...c.observed.subarray(0, c.slot)];
        const f = forecast(
          {
            start: c.workload.epoch - c.workload.history.length * HOUR_MS,
            bucketMs: HOUR_MS,
            counts: { [KEY_TYPE]: history },
          },
          { horizonBuckets: horizon + 24, quantile: options.quantile, events: c.workload.events },
        );
        current = { forecast: f, slot: c.slot };
      }
      const offset = c.slot - current.slot;
      const k = current.forecast.keyTypes[KEY_TYPE]!;
      const upper = k.upper.slice(offset, offset + horizon);
      // Sessions the forecast load needs at the utilisation limit; the rest may generate.
      const serviceS = pooledServiceMs(c.timings) / 1000;
      const floor = options.minRequestSessions ?? 2;
      const spare = upper.map((u) =>
        Math.max(0, c.workers - Math.max(floor, Math.ceil(((u / 3600) * serviceS) / options.maxUtilization))),
      );
      const p = plan(
        {
          ...current.forecast,
          start: current.forecast.start + offset * HOUR_MS,
          horizonBuckets: horizon,
          keyTypes: { [KEY_TYPE]: { ...k, mean: k.mean.slice(offset, offset + horizon), upper } },
        },
        {
          hsmCount: c.hsmCount,
          keysPerSecondPerHsm: { [KEY_TYPE]: (c.timings.sessionsPerHsm * 1000) / keygenJobMs(c.timings) },
          generationShare: spare.map((s) => s / c.workers),
        },
        { [KEY_TYPE]: c.pool },
        { maxPoolSize: options.maxPool },
      );
      for (const w of p.warnings) {
        const at = `day ${Math.floor(c.slot / 24)} ${String(c.slot % 24).padStart(2, '0')}:00`;
        const dryAt = `day ${Math.floor((c.slot + w.peakBucket) / 24)}`;
        const text = `${at}: ${w.kind} (runs dry ${dryAt}): ${w.message}`;
        const seen = notes.get(w.kind);
        if (!seen) notes.set(w.kind, { first: text, worst: text, shortfall: w.shortfall });
        else if (w.shortfall > seen.shortfall)
          notes.set(w.kind, { ...seen, worst: text, shortfall: w.shortfall });
      }
      const target = p.keyTypes[KEY_TYPE]!.target;
      const allowed = p.generationAllowed[0] ? spare[0] : 0;
      return { keygenSessions: sessionsFor(target - c.pool, allowed, c), target };
    },
  };
}
