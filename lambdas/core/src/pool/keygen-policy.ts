/**
 * The keygen policy: how much to generate now, per key type. `forecast` (default): the planner's target
 * from the demand forecast, generating only in the plan's allowed hours; `targets`: fixed levels (the
 * fill-to-maximum baseline). Either way, below the emergency low-water mark keys are always generated.
 * Takes its settings as values (the handler reads them from lambdas/config), never from the environment.
 */
import { HOUR_MS, forecast, type DemandHistory } from '../forecast';
import { plan } from '../planning';
import { KEY_TYPES, type KeyType } from '../shared/algorithms';
import type { KeygenDecision, KeygenPolicyName } from './keygen-cycle';

/** The policy's settings (KEYGEN_POLICY, POOL_TARGETS, POOL_LOW_WATER, KEYGEN_KEY_TYPES, HSM_COUNT). */
export interface KeygenPolicySettings {
  readonly policy: KeygenPolicyName;
  /** For the `targets` policy. */
  readonly targets: Partial<Record<KeyType, number>>;
  /** Below it keys are generated even in paused hours. */
  readonly lowWater: Partial<Record<KeyType, number>>;
  /** The key types the pool holds. */
  readonly keyTypes: readonly KeyType[];
  /** HSMs whose keygen capacity the planner counts. */
  readonly hsmCount: number;
}

/** The forecast and planning settings the `forecast` policy uses. */
export interface KeygenPlanningSettings {
  readonly horizonDays: number;
  /** Upper quantile of forecast errors the safety stock covers. */
  readonly quantile: number;
  /** The pool target never exceeds this, per key type. */
  readonly maxPoolKeys: number;
  /** Hours of day (local) in which generation is paused. */
  readonly pausedHoursOfDay: readonly number[];
  readonly timeZoneOffsetMinutes: number;
  readonly events: ReadonlyArray<{
    readonly name: string;
    readonly start: number;
    readonly end: number;
    readonly multiplier: number;
    readonly keyTypes?: readonly string[];
  }>;
}

export interface KeygenPolicyInputs {
  readonly config: KeygenPolicySettings;
  readonly planning: KeygenPlanningSettings;
  readonly available: Partial<Record<KeyType, number>>;
  readonly history: (keyTypes: readonly KeyType[]) => Promise<DemandHistory>;
  /** Measured keys/s per HSM per key type (undefined: not measured yet). */
  readonly measuredRate: (keyType: KeyType) => Promise<number | undefined>;
}

/** Conservative keygen rates (keys/s per HSM) used until the function has measured its own. */
const DEFAULT_RATES: Readonly<Record<KeyType, number>> = {
  'RSA-2048': 1.5,
  'RSA-3072': 0.5,
  'RSA-4096': 0.2,
  'EC-P256': 100,
  'EC-P384': 50,
};

export async function decideKeygen(inputs: KeygenPolicyInputs): Promise<KeygenDecision> {
  const { policy, lowWater, keyTypes, hsmCount } = inputs.config;
  if (policy === 'targets') {
    return { policy, targets: inputs.config.targets, generationAllowed: true, lowWater, warnings: [] };
  }
  const history = await inputs.history(keyTypes);
  const horizonBuckets = inputs.planning.horizonDays * 24;
  const predicted = forecast(history, {
    horizonBuckets,
    quantile: inputs.planning.quantile,
    timeZoneOffsetMinutes: inputs.planning.timeZoneOffsetMinutes,
    events: inputs.planning.events.map((e) => ({
      name: e.name,
      start: e.start,
      end: e.end,
      multiplier: e.multiplier,
      keyTypes: e.keyTypes as KeyType[] | undefined,
    })),
  });
  const keysPerSecondPerHsm: Partial<Record<KeyType, number>> = {};
  for (const keyType of keyTypes) {
    keysPerSecondPerHsm[keyType] = (await inputs.measuredRate(keyType)) ?? DEFAULT_RATES[keyType];
  }
  const result = plan(predicted, { hsmCount, keysPerSecondPerHsm }, inputs.available, {
    maxPoolSize: inputs.planning.maxPoolKeys,
    pausedHoursOfDay: inputs.planning.pausedHoursOfDay,
    timeZoneOffsetMinutes: inputs.planning.timeZoneOffsetMinutes,
  });
  const targets: Partial<Record<KeyType, number>> = {};
  for (const keyType of KEY_TYPES) targets[keyType] = Math.ceil(result.keyTypes[keyType]?.target ?? 0);
  // The plan's first bucket starts at the current hour (history ends at the last complete one).
  const current = Math.max(0, Math.floor((Date.now() - result.start) / HOUR_MS));
  return {
    policy,
    targets,
    generationAllowed: result.generationAllowed[current] ?? true,
    lowWater,
    warnings: result.warnings.map((w) => w.message),
    plan: result,
  };
}
