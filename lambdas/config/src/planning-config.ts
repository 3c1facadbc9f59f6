import { int, jsonArray } from './readers';
import { ConfigError } from './errors';
import type { Env } from './types';

/** A known event as configured (ISO times), before it becomes the forecaster's KnownEvent. */
export interface ConfiguredEvent {
  readonly name: string;
  /** Epoch ms, inclusive / exclusive. */
  readonly start: number;
  readonly end: number;
  readonly multiplier: number;
  readonly keyTypes?: readonly string[];
}

/** Forecast and planning settings for the keygen function. */
export interface PlanningConfig {
  readonly horizonDays: number;
  readonly historyWeeks: number;
  /** Upper quantile of forecast errors the safety stock covers. */
  readonly quantile: number;
  /** The pool target never exceeds this, per key type. */
  readonly maxPoolKeys: number;
  /** Hours of day (local) in which generation is paused. */
  readonly pausedHoursOfDay: readonly number[];
  readonly timeZoneOffsetMinutes: number;
  readonly events: readonly ConfiguredEvent[];
}

/**
 * FORECAST_HORIZON_DAYS (7), FORECAST_HISTORY_WEEKS (8), FORECAST_QUANTILE (0.95), POOL_MAX_KEYS
 * (1,000,000), KEYGEN_PAUSED_HOURS ("" or e.g. "10,11"), PLAN_TZ_OFFSET_MINUTES (0), FORECAST_EVENTS
 * (JSON: [{"name","start","end","multiplier","keyTypes"?}] with ISO 8601 times).
 */
export function loadPlanningConfig(env: Env): PlanningConfig {
  return {
    horizonDays: int(env, 'FORECAST_HORIZON_DAYS', 7, 1, 90),
    historyWeeks: int(env, 'FORECAST_HISTORY_WEEKS', 8, 1, 60),
    quantile: fraction(env, 'FORECAST_QUANTILE', 0.95),
    maxPoolKeys: int(env, 'POOL_MAX_KEYS', 1_000_000, 0, 1_000_000_000),
    pausedHoursOfDay: hours(env, 'KEYGEN_PAUSED_HOURS'),
    timeZoneOffsetMinutes: int(env, 'PLAN_TZ_OFFSET_MINUTES', 0, -720, 840),
    events: events(env, 'FORECAST_EVENTS'),
  };
}

function fraction(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!(v > 0 && v < 1)) throw new ConfigError(`${name} must be a number between 0 and 1`, name);
  return v;
}

function hours(env: Env, name: string): number[] {
  const raw = env[name];
  if (!raw) return [];
  const out = raw.split(',').map((s) => Number(s.trim()));
  if (out.some((h) => !Number.isInteger(h) || h < 0 || h > 23)) {
    throw new ConfigError(`${name} must be comma-separated hours 0-23`, name);
  }
  return out;
}

function events(env: Env, name: string): ConfiguredEvent[] {
  return jsonArray(env, name).map((entry: unknown) => {
    const e = entry as Record<string, unknown>;
    const start = Date.parse(String(e.start));
    const end = Date.parse(String(e.end));
    const multiplier = Number(e.multiplier);
    if (typeof e.name !== 'string' || !(end > start) || !(multiplier >= 0)) {
      throw new ConfigError(`${name}: each event needs name, ISO start < end and a multiplier >= 0`, name);
    }
    const keyTypes = Array.isArray(e.keyTypes) ? e.keyTypes.map(String) : undefined;
    return { name: e.name, start, end, multiplier, ...(keyTypes ? { keyTypes } : {}) };
  });
}
