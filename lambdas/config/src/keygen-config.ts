import { KEY_TYPES, isKeyType, type KeyType } from '@pipeline/core/shared';
import type { KeygenPolicyName } from '@pipeline/core/pool';
import { oneOf } from './readers';
import { ConfigError } from './errors';
import { keygenTargets, parseKeyCounts } from './pool-targets';
import type { Env } from './types';
import { ENV } from './env-names';

/** The keygen policy's settings, read once from the environment. */
export interface KeygenPolicyConfig {
  /** `forecast` (default): the planner's targets; `targets`: the fixed POOL_TARGETS. */
  readonly policy: KeygenPolicyName;
  /** POOL_TARGETS, for the `targets` policy. */
  readonly targets: Partial<Record<KeyType, number>>;
  /** POOL_LOW_WATER: below it keys are generated even in paused hours. */
  readonly lowWater: Partial<Record<KeyType, number>>;
  /** KEYGEN_KEY_TYPES: the key types the pool holds (default all). */
  readonly keyTypes: readonly KeyType[];
  /** HSM_COUNT: HSMs whose keygen capacity the planner counts. */
  readonly hsmCount: number;
}

export function loadKeygenPolicyConfig(env: Env): KeygenPolicyConfig {
  const hsmCount = Number(env.HSM_COUNT ?? 1);
  if (!Number.isInteger(hsmCount) || hsmCount < 1)
    throw new ConfigError('HSM_COUNT must be a positive integer', 'HSM_COUNT');
  return {
    policy: oneOf<KeygenPolicyName>(env, ENV.KEYGEN_POLICY, ['forecast', 'targets'], 'forecast'),
    targets: keygenTargets(env),
    lowWater: env.POOL_LOW_WATER ? parseKeyCounts(env.POOL_LOW_WATER, 'POOL_LOW_WATER') : {},
    keyTypes: pooledKeyTypes(env),
    hsmCount,
  };
}

/** KEYGEN_KEY_TYPES ("RSA-2048,EC-P256"): the key types the pool holds; default all. */
export function pooledKeyTypes(env: Env): KeyType[] {
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
