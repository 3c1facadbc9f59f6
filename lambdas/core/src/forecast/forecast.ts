import type { KeyType } from '../shared/algorithms';
import { ForecastInputError } from './errors';
import { fitBestHoltWinters, fitHoltWinters, holtWintersForecast, rollingScaledErrors } from './holt-winters';
import { OFFICE_HOURS_PROFILE, hourOfWeek, normalisedWeights } from './profile';
import {
  HOUR_MS,
  WEEK_BUCKETS,
  type DefaultProfile,
  type DemandHistory,
  type Forecast,
  type ForecastOptions,
  type KeyTypeForecast,
  type KnownEvent,
} from './types';

const DEFAULTS = {
  horizonBuckets: 7 * 24,
  quantile: 0.95,
  minHistoryBuckets: 2 * WEEK_BUCKETS,
  coldStartUpperFactor: 1.5,
};

/**
 * Forecast of requests per hourly bucket for every key type in the history. Holt-Winters (additive,
 * weekly season of 168 buckets, damped trend) when the history holds at least `minHistoryBuckets`, else
 * the default profile scaled to what little history there is. `upper` adds the `quantile` of past
 * rolling-origin (up to a week ahead) errors, scaled by sqrt(prediction) because counts are
 * Poisson-like. Known events multiply both in their window, and are divided out of the history in theirs.
 */
export function forecast(history: DemandHistory, options: ForecastOptions = {}): Forecast {
  validate(history, options);
  const horizon = options.horizonBuckets ?? DEFAULTS.horizonBuckets;
  const quantile = options.quantile ?? DEFAULTS.quantile;
  const minHistory = Math.max(WEEK_BUCKETS + 1, options.minHistoryBuckets ?? DEFAULTS.minHistoryBuckets);
  const lengths = Object.values(history.counts).map((c) => c?.length ?? 0);
  const length = lengths.length ? Math.max(...lengths) : 0;
  const start = history.start + length * history.bucketMs;
  const keyTypes: Partial<Record<KeyType, KeyTypeForecast>> = {};
  const events = options.events ?? [];
  for (const [keyType, observed] of Object.entries(history.counts) as [KeyType, readonly number[]][]) {
    // Past event windows are divided by their multiplier, so last year's (or this week's) deadline
    // neither inflates the level and trend nor counts twice once the event multiplies the forecast.
    const historyStart = start - observed.length * history.bucketMs;
    const factorAt = eventFactor(keyType, events);
    const counts = observed.map((c, i) => {
      const f = factorAt(historyStart + i * history.bucketMs);
      return f > 0 ? c / f : c;
    });
    // Series shorter than the longest are missing their oldest buckets: those count as unknown, not zero.
    const raw =
      counts.length >= minHistory
        ? seasonalForecast(counts, horizon, quantile, options)
        : coldStart(keyType, counts, start, history.bucketMs, horizon, options);
    keyTypes[keyType] = applyEvents(raw, start, history.bucketMs, factorAt);
  }
  return { start, bucketMs: history.bucketMs, horizonBuckets: horizon, quantile, keyTypes };
}

function seasonalForecast(
  series: readonly number[],
  horizon: number,
  quantile: number,
  options: ForecastOptions,
): KeyTypeForecast {
  const fit = options.parameters
    ? fitHoltWinters(series, options.parameters, WEEK_BUCKETS)
    : fitBestHoltWinters(series, WEEK_BUCKETS);
  let absSum = 0;
  for (let t = WEEK_BUCKETS; t < series.length; t++) absSum += Math.abs(fit.errors[t]);
  // Errors of forecasts made up to a week ahead from past origins: the spread a weekly plan really faces.
  const scaled = rollingScaledErrors(series, fit.parameters, Math.min(horizon, WEEK_BUCKETS));
  const errorQuantile = Math.max(0, empiricalQuantile(scaled, quantile));
  const mean = holtWintersForecast(fit, horizon);
  const upper = mean.map((m) => m + errorQuantile * Math.sqrt(Math.max(1, m)));
  return {
    method: 'holt-winters',
    mean,
    upper,
    parameters: fit.parameters,
    errorQuantile,
    oneStepMae: absSum / (series.length - WEEK_BUCKETS),
  };
}

/** Default profile; its level is rescaled to the observed mean when at least a day of history exists. */
function coldStart(
  keyType: KeyType,
  counts: readonly number[],
  start: number,
  bucketMs: number,
  horizon: number,
  options: ForecastOptions,
): KeyTypeForecast {
  const profile = profileFor(keyType, options.defaultProfile);
  const weights = normalisedWeights(profile);
  const offset = options.timeZoneOffsetMinutes ?? 0;
  const weightAt = (epochMs: number): number => weights[hourOfWeek(epochMs, offset)];
  let level = profile.meanPerBucket;
  if (counts.length >= 24) {
    const historyStart = start - counts.length * bucketMs;
    let observed = 0;
    let expected = 0;
    counts.forEach((c, i) => {
      observed += c;
      expected += weightAt(historyStart + i * bucketMs);
    });
    if (expected > 0) level = observed / expected;
  }
  const factor = options.coldStartUpperFactor ?? DEFAULTS.coldStartUpperFactor;
  const mean: number[] = [];
  const upper: number[] = [];
  for (let h = 0; h < horizon; h++) {
    const m = level * weightAt(start + h * bucketMs);
    mean.push(m);
    upper.push(m * factor);
  }
  return { method: 'default-profile', mean, upper, errorQuantile: NaN, oneStepMae: NaN };
}

function profileFor(keyType: KeyType, given: ForecastOptions['defaultProfile']): DefaultProfile {
  if (!given) return OFFICE_HOURS_PROFILE;
  if ('weights' in given) return given as DefaultProfile;
  return (given as Partial<Record<KeyType, DefaultProfile>>)[keyType] ?? OFFICE_HOURS_PROFILE;
}

/** Product of the multipliers of the events (for this key type) whose window holds `epochMs`. */
function eventFactor(keyType: KeyType, events: readonly KnownEvent[]): (epochMs: number) => number {
  const relevant = events.filter((e) => !e.keyTypes || e.keyTypes.includes(keyType));
  return (t) => relevant.reduce((acc, e) => (t >= e.start && t < e.end ? acc * e.multiplier : acc), 1);
}

function applyEvents(
  f: KeyTypeForecast,
  start: number,
  bucketMs: number,
  factorAt: (epochMs: number) => number,
): KeyTypeForecast {
  return {
    ...f,
    mean: f.mean.map((m, i) => m * factorAt(start + i * bucketMs)),
    upper: f.upper.map((u, i) => u * factorAt(start + i * bucketMs)),
  };
}

/** Nearest-rank quantile; 0 for an empty sample. */
export function empiricalQuantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

function validate(history: DemandHistory, options: ForecastOptions): void {
  if (history.bucketMs !== HOUR_MS) {
    // The season is hour-of-day x day-of-week: 168 buckets only means a week for hourly buckets.
    throw new ForecastInputError(`history buckets must be ${HOUR_MS} ms (one hour)`, 'bucketMs');
  }
  if (!Number.isFinite(history.start) || history.start % HOUR_MS !== 0) {
    throw new ForecastInputError('history start must be an epoch ms on an hour boundary', 'start');
  }
  for (const [keyType, counts] of Object.entries(history.counts)) {
    if (counts?.some((c) => !Number.isFinite(c) || c < 0)) {
      throw new ForecastInputError(`counts of ${keyType} must be finite and non-negative`, 'counts');
    }
  }
  const horizon = options.horizonBuckets ?? DEFAULTS.horizonBuckets;
  if (!Number.isInteger(horizon) || horizon < 1) {
    throw new ForecastInputError('horizonBuckets must be a positive integer', 'horizonBuckets');
  }
  const q = options.quantile ?? DEFAULTS.quantile;
  if (!(q > 0 && q < 1)) throw new ForecastInputError('quantile must be in (0, 1)', 'quantile');
  for (const e of options.events ?? []) {
    if (!(e.multiplier >= 0) || !(e.end > e.start)) {
      throw new ForecastInputError(
        `event ${e.name} needs end > start and a non-negative multiplier`,
        'events',
      );
    }
  }
}
