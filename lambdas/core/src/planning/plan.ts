import type { KeyType } from '../shared/algorithms';
import type { Forecast } from '../forecast/types';
import { hourOfWeek } from '../forecast/profile';
import { PlanInputError } from './errors';
import { firstDryBucket, requiredStock } from './fluid';
import type { GenerationWindow, KeyTypePlan, KeygenCapacity, Plan, PlanOptions, PlanWarning } from './types';

const DEFAULT_MAX_EXTRA_HSMS = 64;

/**
 * The pool plan for the forecast horizon. Per key type:
 * - fluidBound: the stock needed now on the mean forecast (see requiredStock), generating at full
 *   capacity in allowed buckets;
 * - target: planned on the upper quantile and without counting the current bucket's generation (the
 *   keygen function is what produces it), so target >= fluidBound; the difference is the safety stock;
 * - a warning when even full generation from now on leaves the pool short before a peak, with the
 *   smallest number of extra HSMs (fully free for generation in allowed buckets) that closes the gap.
 * @param poolDepth keys in the pool now, per key type (missing = 0)
 */
export function plan(
  forecast: Forecast,
  capacity: KeygenCapacity,
  poolDepth: Partial<Record<KeyType, number>>,
  options: PlanOptions = {},
): Plan {
  const keyTypes = Object.keys(forecast.keyTypes) as KeyType[];
  validate(forecast, capacity, keyTypes);
  const buckets = forecast.horizonBuckets;
  const bucketSeconds = forecast.bucketMs / 1000;
  const allowed = generationAllowed(forecast, capacity, options);
  const shareAt = (b: number): number => Math.min(1, Math.max(0, capacity.generationShare?.[b] ?? 1));
  const capacitySeconds = (extraHsms: number): number[] =>
    allowed.map((ok, b) => (ok ? (shareAt(b) * capacity.hsmCount + extraHsms) * bucketSeconds : 0));

  const mean = keyTypes.map((k) => forecast.keyTypes[k]!.mean.slice(0, buckets));
  const upper = keyTypes.map((k) => forecast.keyTypes[k]!.upper.slice(0, buckets));
  const secondsPerKey = keyTypes.map((k) => 1 / capacity.keysPerSecondPerHsm[k]!);
  const depth = keyTypes.map((k) => Math.max(0, poolDepth[k] ?? 0));

  const base = capacitySeconds(0);
  const onMean = requiredStock(mean, secondsPerKey, base);
  const onUpper = requiredStock(upper, secondsPerKey, base);
  const result: Partial<Record<KeyType, KeyTypePlan>> = {};
  const warnings: PlanWarning[] = [];
  const infeasible = keyTypes.some((_, i) => onUpper[i][0] > depth[i] + 1e-6);
  const extraHsms = infeasible ? smallestExtra(upper, secondsPerKey, depth, capacitySeconds, options) : 0;

  keyTypes.forEach((keyType, i) => {
    const fluidBound = onMean[i][0];
    // Hold the current bucket's whole demand plus what is needed after it: generation in this bucket
    // is the keygen function's job, not something to count on in advance.
    const required = Math.max(fluidBound, upper[i][0] + onUpper[i][1]);
    const cap = maxFor(keyType, options.maxPoolSize);
    const target = Math.ceil(Math.min(required, cap));
    const shortfall = Math.max(0, onUpper[i][0] - depth[i]);
    const capped = cap < required;
    result[keyType] = {
      demand: mean[i].reduce((a, b) => a + b, 0),
      fluidBound,
      safetyStock: required - fluidBound,
      target,
      capped,
      shortfall,
    };
    const demandSeconds = upper.map((u) => u.reduce((a, b) => a + b, 0));
    const shareOfCapacity =
      (demandSeconds[i] * secondsPerKey[i]) /
        demandSeconds.reduce((a, d, k) => a + d * secondsPerKey[k], 0) || 0;
    const capacityKeys = base.map((c) => (c * shareOfCapacity) / secondsPerKey[i]);
    if (shortfall > 1e-6) {
      const peakBucket = Math.max(0, firstDryBucket(depth[i], upper[i], capacityKeys));
      warnings.push({
        kind: 'peak-unreachable',
        keyType,
        message:
          `${keyType}: ${Math.ceil(shortfall)} keys short by bucket ${peakBucket} even generating at full ` +
          `capacity; ${extraHsms === null ? 'more HSMs than allowed are' : `${extraHsms} more HSM(s)`} needed`,
        shortfall,
        peakBucket,
        peakAt: forecast.start + peakBucket * forecast.bucketMs,
        extraHsms,
      });
    }
    if (capped) {
      const peakBucket = Math.max(0, firstDryBucket(cap, upper[i], capacityKeys));
      warnings.push({
        kind: 'target-capped',
        keyType,
        message: `${keyType}: target ${Math.ceil(required)} capped at ${cap} by maxPoolSize`,
        shortfall: required - cap,
        peakBucket,
        peakAt: forecast.start + peakBucket * forecast.bucketMs,
        extraHsms: null,
      });
    }
  });

  return {
    start: forecast.start,
    bucketMs: forecast.bucketMs,
    generationAllowed: allowed,
    generationWindows: windows(allowed, forecast.start, forecast.bucketMs),
    keyTypes: result,
    warnings,
  };
}

function generationAllowed(forecast: Forecast, capacity: KeygenCapacity, options: PlanOptions): boolean[] {
  const paused = new Set(options.pausedHoursOfDay ?? []);
  const offset = options.timeZoneOffsetMinutes ?? 0;
  const types = Object.values(forecast.keyTypes);
  return Array.from({ length: forecast.horizonBuckets }, (_, b) => {
    const at = forecast.start + b * forecast.bucketMs;
    if (paused.has(hourOfWeek(at, offset) % 24)) return false;
    const total = types.reduce((sum, f) => sum + (f?.upper[b] ?? 0), 0);
    if (options.pauseAtRequestsPerBucket !== undefined && total >= options.pauseAtRequestsPerBucket)
      return false;
    return (capacity.generationShare?.[b] ?? 1) > 0;
  });
}

/** Smallest e in 1..max with every key type's need now covered by its depth; null if none. */
function smallestExtra(
  demand: readonly (readonly number[])[],
  secondsPerKey: readonly number[],
  depth: readonly number[],
  capacitySeconds: (extra: number) => number[],
  options: PlanOptions,
): number | null {
  const max = options.maxExtraHsms ?? DEFAULT_MAX_EXTRA_HSMS;
  const covered = (extra: number): boolean =>
    requiredStock(demand, secondsPerKey, capacitySeconds(extra)).every((r, k) => r[0] <= depth[k] + 1e-6);
  if (!covered(max)) return null;
  // Need falls as capacity rises, so bisect.
  let low = 0;
  let high = max;
  while (high - low > 1) {
    const mid = (low + high) >> 1;
    if (covered(mid)) high = mid;
    else low = mid;
  }
  return high;
}

function windows(allowed: readonly boolean[], start: number, bucketMs: number): GenerationWindow[] {
  const out: GenerationWindow[] = [];
  allowed.forEach((ok, b) => {
    if (!ok) return;
    const from = start + b * bucketMs;
    const last = out[out.length - 1];
    if (last && last.end === from) out[out.length - 1] = { start: last.start, end: from + bucketMs };
    else out.push({ start: from, end: from + bucketMs });
  });
  return out;
}

function maxFor(keyType: KeyType, max: PlanOptions['maxPoolSize']): number {
  if (max === undefined) return Infinity;
  if (typeof max === 'number') return max;
  return max[keyType] ?? Infinity;
}

function validate(forecast: Forecast, capacity: KeygenCapacity, keyTypes: readonly KeyType[]): void {
  if (!(capacity.hsmCount >= 0) || !Number.isFinite(capacity.hsmCount)) {
    throw new PlanInputError('hsmCount must be a non-negative number', 'hsmCount');
  }
  for (const k of keyTypes) {
    const rate = capacity.keysPerSecondPerHsm[k];
    if (!(rate !== undefined && rate > 0 && Number.isFinite(rate))) {
      throw new PlanInputError(`no positive keygen rate for ${k}`, 'keysPerSecondPerHsm');
    }
    const f = forecast.keyTypes[k]!;
    if (f.mean.length < forecast.horizonBuckets || f.upper.length < forecast.horizonBuckets) {
      throw new PlanInputError(`forecast of ${k} is shorter than its horizon`, 'forecast');
    }
  }
}
