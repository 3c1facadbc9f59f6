/**
 * How much to generate now, per key type. `forecast` (default): the planner's target from the demand
 * forecast, generating only in the plan's allowed hours; `targets`: fixed levels from POOL_TARGETS (the
 * fill-to-maximum baseline). Either way, below the emergency low-water mark keys are always generated.
 */
import {
  HOUR_MS,
  KEY_TYPES,
  forecast,
  isKeyType,
  plan,
  type DemandHistory,
  type KeyType,
  type Plan,
  type KeygenDecision as CycleDecision,
} from '../../core/src';
import { ConfigError, keygenTargets, oneOf, parseKeyCounts } from '../../config/src';
import type { PlanningConfig } from '../../config/src/planning-config';

export type KeygenPolicyName = 'forecast' | 'targets';

export interface KeygenDecision extends CycleDecision {
  readonly policy: KeygenPolicyName;
  readonly plan?: Plan;
}

export interface PolicyInputs {
  readonly env: NodeJS.ProcessEnv;
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
  const policy = oneOf<KeygenPolicyName>(inputs.env, 'KEYGEN_POLICY', ['forecast', 'targets'], 'forecast');
  const lowWater = lowWaterMarks(inputs.env);
  if (policy === 'targets') {
    return { policy, targets: keygenTargets(inputs.env), generationAllowed: true, lowWater, warnings: [] };
  }
  const keyTypes = pooledKeyTypes(inputs.env);
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
  const result = plan(predicted, { hsmCount: hsmCount(inputs.env), keysPerSecondPerHsm }, inputs.available, {
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

/** KEYGEN_KEY_TYPES ("RSA-2048,EC-P256"): the key types the pool holds; default all. */
export function pooledKeyTypes(env: NodeJS.ProcessEnv): KeyType[] {
  if (!env.KEYGEN_KEY_TYPES) return [...KEY_TYPES];
  const types = env.KEYGEN_KEY_TYPES.split(',').map((t) => t.trim());
  if (!types.every(isKeyType)) {
    throw new ConfigError(
      `KEYGEN_KEY_TYPES must list key types from ${KEY_TYPES.join(', ')}`,
      'KEYGEN_KEY_TYPES',
    );
  }
  return types;
}

/** POOL_LOW_WATER ("RSA-2048=50,EC-P256=20"): below it keys are generated even in paused hours. */
function lowWaterMarks(env: NodeJS.ProcessEnv): Partial<Record<KeyType, number>> {
  return env.POOL_LOW_WATER ? parseKeyCounts(env.POOL_LOW_WATER, 'POOL_LOW_WATER') : {};
}

function hsmCount(env: NodeJS.ProcessEnv): number {
  const n = Number(env.HSM_COUNT ?? 1);
  if (!Number.isInteger(n) || n < 1)
    throw new ConfigError('HSM_COUNT must be a positive integer', 'HSM_COUNT');
  return n;
}
