import { isKeyType, type KeyType } from '@pipeline/core/shared';
import { ConfigError } from './errors';
import type { Env } from './types';
import { ENV } from './env-names';

/** Parses "RSA-2048=500,EC-P256=200" (from the variable named for errors) into counts per key type. */
export function parseKeyCounts(spec: string, variable: string): Partial<Record<KeyType, number>> {
  const counts: Partial<Record<KeyType, number>> = {};
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [keyType, raw] = part.split('=');
    const count = Number(raw);
    if (!isKeyType(keyType) || !Number.isInteger(count) || count < 0) {
      throw new ConfigError(`${variable} must look like "RSA-2048=500,EC-P256=200"`, variable);
    }
    counts[keyType] = count;
  }
  return counts;
}

/** POOL_TARGETS (the deployment's poolTargets) when unset. */
export const DEFAULT_POOL_TARGETS = 'RSA-2048=200,EC-P256=100,EC-P384=50';

/**
 * Pool targets per key type from POOL_TARGETS: the fill-to-target baseline policy. Types not listed get
 * no keys (requests of those types use the empty-pool policy).
 */
export function keygenTargets(env: Env): Partial<Record<KeyType, number>> {
  return parseKeyCounts(env[ENV.POOL_TARGETS] ?? DEFAULT_POOL_TARGETS, ENV.POOL_TARGETS);
}
