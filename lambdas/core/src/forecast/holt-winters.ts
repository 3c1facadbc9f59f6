import { WEEK_BUCKETS, type SmoothingParameters } from './types';

/** State after filtering a series: enough to forecast and to judge the fit. */
export interface HoltWintersFit {
  readonly parameters: SmoothingParameters;
  readonly level: number;
  readonly trend: number;
  /** Seasonal terms; season[i] belongs to series positions p with p % period === i. */
  readonly season: Float64Array;
  /** Number of observations filtered (the next forecast is for position `length`). */
  readonly length: number;
  readonly period: number;
  /** One-step predictions and errors for positions >= period (the first season only initialises). */
  readonly predictions: Float64Array;
  readonly errors: Float64Array;
  readonly sse: number;
}

/** The grid searched when no constants are given: small on purpose, the fit runs in a Lambda. */
const GRID = {
  alpha: [0.05, 0.1, 0.2, 0.35],
  beta: [0, 0.005, 0.02],
  gamma: [0.05, 0.15, 0.3],
};
/** Damped trend: a long horizon (weeks) must not extrapolate a short-term slope without limit. */
export const DEFAULT_PHI = 0.99;

/**
 * Additive Holt-Winters with a damped trend. Additive (not multiplicative) seasonality because night
 * buckets can be zero, which makes multiplicative seasonal indices unstable; forecasts are clamped at 0.
 * Initialisation: level = mean of the first season, trend = slope between the first two seasons' means,
 * season = the average deviation from each season's mean over the first (up to) two seasons.
 */
export function fitHoltWinters(
  series: readonly number[],
  parameters: SmoothingParameters,
  period = WEEK_BUCKETS,
  /** Called before each update with the state that knows positions < t: for rolling-origin forecasts. */
  visit?: (t: number, level: number, trend: number, season: Float64Array) => void,
): HoltWintersFit {
  const n = series.length;
  const seasons = Math.min(2, Math.floor(n / period));
  if (seasons < 1) throw new RangeError(`Holt-Winters needs at least one season (${period} buckets)`);
  const means: number[] = [];
  for (let s = 0; s < seasons; s++) means.push(mean(series, s * period, (s + 1) * period));
  const season = new Float64Array(period);
  for (let i = 0; i < period; i++) {
    let sum = 0;
    for (let s = 0; s < seasons; s++) sum += series[s * period + i] - means[s];
    season[i] = sum / seasons;
  }
  let trend = seasons > 1 ? (means[1] - means[0]) / period : 0;
  // The first season's mean sits at its middle; move the level to its end, where filtering starts. One-step
  // errors are kept from the second season on (slightly optimistic there: it also seeded the season).
  let level = means[0] + ((period - 1) / 2) * trend;
  const { alpha, beta, gamma, phi } = parameters;
  const predictions = new Float64Array(n);
  const errors = new Float64Array(n);
  let sse = 0;
  for (let t = period; t < n; t++) {
    visit?.(t, level, trend, season);
    const i = t % period;
    const predicted = level + phi * trend + season[i];
    const y = series[t];
    const error = y - predicted;
    predictions[t] = predicted;
    errors[t] = error;
    sse += error * error;
    const previousLevel = level;
    level = alpha * (y - season[i]) + (1 - alpha) * (previousLevel + phi * trend);
    trend = beta * (level - previousLevel) + (1 - beta) * phi * trend;
    season[i] = gamma * (y - level) + (1 - gamma) * season[i];
  }
  return { parameters, level, trend, season, length: n, period, predictions, errors, sse };
}

/**
 * Rolling-origin errors: from every `stride`-th position, forecast up to `horizon` buckets ahead with the
 * state known then and compare with what came. Scaled by sqrt(prediction) (Poisson-like counts). These are
 * the errors a week-ahead plan actually makes, larger than one-step errors.
 */
export function rollingScaledErrors(
  series: readonly number[],
  parameters: SmoothingParameters,
  horizon: number,
  stride = 24,
  period = WEEK_BUCKETS,
): number[] {
  const out: number[] = [];
  const { phi } = parameters;
  fitHoltWinters(series, parameters, period, (t, level, trend, season) => {
    if ((t - period) % stride !== 0) return;
    let damped = 0;
    let power = 1;
    for (let h = 1; h <= horizon && t + h - 1 < series.length; h++) {
      power *= phi;
      damped += power;
      const predicted = Math.max(0, level + damped * trend + season[(t + h - 1) % period]);
      out.push((series[t + h - 1] - predicted) / Math.sqrt(Math.max(1, predicted)));
    }
  });
  return out;
}

/** Fits every grid point and keeps the one with the least one-step squared error. */
export function fitBestHoltWinters(
  series: readonly number[],
  period = WEEK_BUCKETS,
  phi = DEFAULT_PHI,
): HoltWintersFit {
  let best: HoltWintersFit | undefined;
  for (const alpha of GRID.alpha) {
    for (const beta of GRID.beta) {
      for (const gamma of GRID.gamma) {
        const fit = fitHoltWinters(series, { alpha, beta, gamma, phi }, period);
        if (!best || fit.sse < best.sse) best = fit;
      }
    }
  }
  return best as HoltWintersFit;
}

/** Forecast for the `horizon` positions after the fitted series, clamped at zero. */
export function holtWintersForecast(fit: HoltWintersFit, horizon: number): number[] {
  const out: number[] = [];
  const { phi } = fit.parameters;
  let damped = 0;
  let power = 1;
  for (let h = 1; h <= horizon; h++) {
    power *= phi;
    damped += power;
    const value = fit.level + damped * fit.trend + fit.season[(fit.length + h - 1) % fit.period];
    out.push(Math.max(0, value));
  }
  return out;
}

function mean(values: readonly number[], from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += values[i];
  return sum / (to - from);
}
