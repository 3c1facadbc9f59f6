import { mulberry32, poisson } from './rng';
import type { ArrivalSource, Workload } from './types';

/** Local copy: an imported binding is a getter call in the hot arrival loop under CommonJS. */
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The study's ramp: 22 blocks of 100 requests, gap (ms) between requests within each block. */
export const STUDY_RAMP_GAPS_MS = [
  1000, 800, 700, 600, 500, 400, 300, 200, 100, 90, 80, 70, 50, 20, 10, 20, 50, 70, 80, 90, 100, 200,
];

/** The tax-deadline day (docs/capacity-simulator.md, "Workloads"): requests/s by hour, UTC = local for simplicity. */
export const TAX_PEAK_RATE = 50;
const BUSINESS_HOURS = { from: 8, to: 18 };
const BUSIEST_HOURS = [10, 11];

export function taxDayRate(hour: number): number {
  if (BUSIEST_HOURS.includes(hour)) return TAX_PEAK_RATE;
  if (hour >= BUSINESS_HOURS.from && hour < BUSINESS_HOURS.to) return TAX_PEAK_RATE / 2;
  return TAX_PEAK_RATE / 4;
}

/** Poisson arrivals with a rate constant within each hour (memoryless, so each hour restarts exactly). */
export function poissonArrivals(rates: Float64Array, seed: number): () => ArrivalSource {
  return () => {
    const random = mulberry32(seed);
    let hour = 0;
    let t = 0;
    return () => {
      while (hour < rates.length) {
        const perMs = rates[hour] / 1000;
        if (perMs > 0) {
          t += -Math.log(1 - random()) / perMs;
          if (t < (hour + 1) * HOUR_MS) return t;
        }
        hour++;
        t = hour * HOUR_MS;
      }
      return -1;
    };
  };
}

/** Evenly spaced arrivals (tests and queueing checks): `rate` per second for `seconds`. */
export function constantWorkload(rate: number, seconds: number, initialPool = 0): Workload {
  const count = Math.round(rate * seconds);
  const gap = 1000 / rate;
  const hours = Math.max(1, Math.ceil((seconds * 1000) / HOUR_MS));
  return {
    name: 'constant',
    description: `${rate}/s evenly spaced for ${seconds} s`,
    epoch: Date.UTC(2025, 0, 6),
    durationMs: seconds * 1000,
    arrivals: () => {
      let i = 0;
      return () => (i < count ? i++ * gap : -1);
    },
    hourlyRates: new Float64Array(hours).fill(rate),
    peakHours: new Uint8Array(hours),
    history: [],
    events: [],
    initialPool,
  };
}

/** The study's 2,200-request ramp (1 to 100 requests/s and back); the study's pool was filled beforehand. */
export function studyRamp(): Workload {
  const times: number[] = [];
  let t = 0;
  for (const gap of STUDY_RAMP_GAPS_MS) {
    for (let i = 0; i < 100; i++) {
      times.push(t);
      t += gap;
    }
  }
  const hours = Math.ceil(t / HOUR_MS);
  const rates = new Float64Array(hours).fill(times.length / (t / 1000));
  return {
    name: 'ramp',
    description: `study ramp: 2,200 requests in blocks of 100, gaps ${STUDY_RAMP_GAPS_MS.join('/')} ms (${(t / 1000).toFixed(0)} s)`,
    epoch: Date.UTC(2025, 0, 6),
    durationMs: t,
    arrivals: () => {
      let i = 0;
      return () => (i < times.length ? times[i++] : -1);
    },
    hourlyRates: rates,
    peakHours: new Uint8Array(hours),
    history: [],
    events: [],
    initialPool: times.length,
  };
}

export interface TaxWeekOptions {
  /** Days of ordinary demand before the deadline week (time to fill the pool); default 21. */
  readonly leadInDays?: number;
  /** Ordinary demand as a fraction of the deadline week's, same daily shape; default 0.1. */
  readonly ordinaryFraction?: number;
  readonly seed?: number;
}

/**
 * The tax-deadline week (docs/capacity-simulator.md, "Workloads"): 50/s in the two busiest hours (10-12), 25/s the rest of business hours
 * (08-18), 12.5/s at night, every day: 1.71 M requests a day, 11.97 M in the week. It is preceded by
 * `leadInDays` of ordinary demand (the same shape at `ordinaryFraction`) and 4 weeks of history.
 * The deadline week is configured as a known event with multiplier 1 / ordinaryFraction. The pool
 * starts with 1,000 keys (the fill-max policy starts full instead).
 */
export function taxWeek(options: TaxWeekOptions = {}): Workload {
  const leadIn = options.leadInDays ?? 21;
  const ordinary = options.ordinaryFraction ?? 0.1;
  const seed = options.seed ?? 1;
  const epoch = Date.UTC(2025, 3, 7); // a Monday
  const hours = (leadIn + 7) * 24;
  const rates = new Float64Array(hours);
  const peakHours = new Uint8Array(hours);
  for (let h = 0; h < hours; h++) {
    const inWeek = h >= leadIn * 24;
    rates[h] = taxDayRate(h % 24) * (inWeek ? 1 : ordinary);
    peakHours[h] = inWeek && BUSIEST_HOURS.includes(h % 24) ? 1 : 0;
  }
  const random = mulberry32(seed + 1000);
  const history = Array.from({ length: 4 * 168 }, (_, h) =>
    poisson(taxDayRate(h % 24) * ordinary * 3600, random),
  );
  const weekStart = epoch + leadIn * DAY_MS;
  return {
    name: 'tax-week',
    description:
      `tax-deadline week (50/s 10-12, 25/s 08-18, 12.5/s night: ${((sum(rates.subarray(leadIn * 24)) * 3600) / 1e6).toFixed(2)} M requests) ` +
      `after ${leadIn} days at ${ordinary * 100}% of it`,
    epoch,
    durationMs: hours * HOUR_MS,
    arrivals: poissonArrivals(rates, seed),
    hourlyRates: rates,
    peakHours,
    history,
    events: [
      { name: 'tax deadline week', start: weekStart, end: weekStart + 7 * DAY_MS, multiplier: 1 / ordinary },
    ],
    // What ordinary operation leaves in the pool: enough for the first minutes before generation starts.
    initialPool: 1000,
  };
}

export interface YearOptions {
  /** Mean ordinary level as a fraction of the deadline week's shape; default 0.02. */
  readonly ordinaryFraction?: number;
  readonly seed?: number;
}

/**
 * A synthetic year (52 weeks from a Monday in January): the deadline day shape, weekends at 30%, an
 * annual swing of +-30% (high in spring, low in summer), hour-to-hour log-normal noise (sigma 0.25), and
 * the deadline week (week 18, early May) at full strength. Seeded: the same seed gives the same year.
 */
export function syntheticYear(options: YearOptions = {}): Workload {
  const ordinary = options.ordinaryFraction ?? 0.02;
  const seed = options.seed ?? 1;
  const epoch = Date.UTC(2025, 0, 6);
  const weeks = 52;
  const hours = weeks * 168;
  const taxWeekIndex = 17;
  const random = mulberry32(seed + 2000);
  const season = (day: number): number => 1 + 0.3 * Math.cos((2 * Math.PI * (day - 100)) / 365);
  const weekday = (day: number): number => (day % 7 < 5 ? 1 : 0.3);
  const level = (h: number): number => {
    const day = Math.floor(h / 24);
    return taxDayRate(h % 24) * ordinary * season(day) * weekday(day);
  };
  const rates = new Float64Array(hours);
  const peakHours = new Uint8Array(hours);
  for (let h = 0; h < hours; h++) {
    const inTaxWeek = Math.floor(h / 168) === taxWeekIndex;
    const noise = Math.exp(0.25 * gaussian(random) - 0.03125);
    rates[h] = inTaxWeek ? taxDayRate(h % 24) : level(h) * noise;
    peakHours[h] = inTaxWeek && BUSIEST_HOURS.includes(h % 24) ? 1 : 0;
  }
  const history = Array.from({ length: 4 * 168 }, (_, h) =>
    poisson(level(h + hours - 4 * 168) * 3600, random),
  );
  const weekStart = epoch + taxWeekIndex * 7 * DAY_MS;
  // What an operator would configure: per day of the deadline week, its expected demand over the usual
  // level of that day (weekends included: the deadline does not rest on Saturday).
  const events = Array.from({ length: 7 }, (_, d) => {
    const day = taxWeekIndex * 7 + d;
    return {
      name: `tax deadline week, day ${d + 1}`,
      start: weekStart + d * DAY_MS,
      end: weekStart + (d + 1) * DAY_MS,
      multiplier: 1 / (ordinary * season(day) * weekday(day)),
    };
  });
  return {
    name: 'year',
    description: `synthetic year: ${((sum(rates) * 3600) / 1e6).toFixed(2)} M requests, seasonality, noise, deadline week 18`,
    epoch,
    durationMs: hours * HOUR_MS,
    arrivals: poissonArrivals(rates, seed),
    hourlyRates: rates,
    peakHours,
    history,
    events,
    initialPool: 1000,
  };
}

function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(Math.max(1e-12, random()))) * Math.cos(2 * Math.PI * random());
}

function sum(values: Float64Array): number {
  let s = 0;
  for (const v of values) s += v;
  return s;
}

export const WORKLOADS: Readonly<Record<string, (seed: number) => Workload>> = {
  ramp: () => studyRamp(),
  'tax-week': (seed) => taxWeek({ seed }),
  year: (seed) => syntheticYear({ seed }),
};
