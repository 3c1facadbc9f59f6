/**
 * How much to generate now, per key type. `forecast` (default): the planner's target from the demand
 * forecast, generating only in the plan's allowed hours; `targets`: fixed levels from POOL_TARGETS (the
 * fill-to-maximum baseline). Either way, below the emergency low-water mark keys are always generated.
 * Reads its settings from a KeygenPolicyConfig (lambdas/config), never from the environment.
 */
import {
  HOUR_MS,
  KEY_TYPES,
  forecast,
  plan,
  type DemandHistory,
  type KeyType,
  type Plan,
  type KeygenDecision as CycleDecision,
} from '@pipeline/core';
import type { KeygenPolicyConfig, KeygenPolicyName, PlanningConfig } from '@pipeline/config';

export type { KeygenPolicyName };

export interface KeygenDecision extends CycleDecision {
  readonly policy: KeygenPolicyName;
  readonly plan?: Plan;
}

export interface PolicyInputs {
  readonly config: KeygenPolicyConfig;
  readonly planning: PlanningConfig;
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

export async function decide(inputs: PolicyInputs): Promise<KeygenDecision> {
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
