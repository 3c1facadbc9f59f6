import type { KeyType } from '../shared/algorithms';

/** One hour: the demand history and the forecast are kept in hourly buckets. */
export const HOUR_MS = 3_600_000;
/** Buckets in one season of the model: hour-of-day x day-of-week. */
export const WEEK_BUCKETS = 168;

/**
 * Request counts per bucket for each key type, oldest first. Bucket i covers
 * [start + i * bucketMs, start + (i + 1) * bucketMs). Only complete buckets belong here.
 */
export interface DemandHistory {
  /** Epoch ms of the first bucket, a multiple of bucketMs. */
  readonly start: number;
  readonly bucketMs: number;
  readonly counts: Partial<Record<KeyType, readonly number[]>>;
}

/** A configured event that raises demand in its window, e.g. a filing deadline. */
export interface KnownEvent {
  readonly name: string;
  /** Epoch ms, inclusive. */
  readonly start: number;
  /** Epoch ms, exclusive. */
  readonly end: number;
  /** Factor applied to the forecast (mean and upper) of every bucket that starts in the window. */
  readonly multiplier: number;
  /** Key types the event affects; all when omitted. */
  readonly keyTypes?: readonly KeyType[];
}

/** The shape used when the history is too short: relative weights per hour of the week. */
export interface DefaultProfile {
  /** Expected requests per bucket, averaged over the week. */
  readonly meanPerBucket: number;
  /** 168 non-negative weights, Monday 00:00 first (normalised to mean 1 when used). */
  readonly weights: readonly number[];
}

/** Holt-Winters smoothing constants (level, trend, season) and the trend damping per bucket. */
export interface SmoothingParameters {
  readonly alpha: number;
  readonly beta: number;
  readonly gamma: number;
  readonly phi: number;
}

export interface ForecastOptions {
  /** Buckets to forecast; default 168 (7 days). */
  readonly horizonBuckets?: number;
  /** Upper quantile of past rolling-origin forecast errors used for `upper`; default 0.95. */
  readonly quantile?: number;
  /** Below this many history buckets the default profile is used; default 336 (two weeks). */
  readonly minHistoryBuckets?: number;
  /** Cold-start profile, one for all key types or one per key type; default: office-hours profile. */
  readonly defaultProfile?: DefaultProfile | Partial<Record<KeyType, DefaultProfile>>;
  /** Factor of the cold-start mean used as its upper bound; default 1.5. */
  readonly coldStartUpperFactor?: number;
  readonly events?: readonly KnownEvent[];
  /** Fixed smoothing constants; when omitted they are fitted on the history (small grid, one-step SSE). */
  readonly parameters?: SmoothingParameters;
  /** Offset of local time from UTC for hour-of-week alignment of the default profile; default 0. */
  readonly timeZoneOffsetMinutes?: number;
}

export interface KeyTypeForecast {
  readonly method: 'holt-winters' | 'default-profile';
  /** Expected requests per bucket. */
  readonly mean: readonly number[];
  /** Upper quantile of requests per bucket. */
  readonly upper: readonly number[];
  /** Fitted (or given) constants; absent on cold start. */
  readonly parameters?: SmoothingParameters;
  /** Quantile of rolling-origin errors scaled by sqrt(prediction) (Poisson-like noise); NaN on cold start. */
  readonly errorQuantile: number;
  /** Mean absolute one-step error over the history after the first season; NaN on cold start. */
  readonly oneStepMae: number;
}

export interface Forecast {
  /** Epoch ms of the first forecast bucket (right after the history). */
  readonly start: number;
  readonly bucketMs: number;
  readonly horizonBuckets: number;
  readonly quantile: number;
  readonly keyTypes: Partial<Record<KeyType, KeyTypeForecast>>;
}
