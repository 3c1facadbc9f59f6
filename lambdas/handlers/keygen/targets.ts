import { isKeyType, type KeyType } from '../../core/src';
import { ConfigError } from '../../config/src';

/**
 * Pool targets per key type from POOL_TARGETS ("RSA-2048=500,EC-P256=200"): the fill-to-target baseline.
 * Types not listed get no keys (requests of those types use the empty-pool policy).
 */
export function keygenTargets(env: NodeJS.ProcessEnv = process.env): Partial<Record<KeyType, number>> {
  const spec = env.POOL_TARGETS ?? 'RSA-2048=200,EC-P256=100,EC-P384=50';
  const targets: Partial<Record<KeyType, number>> = {};
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [keyType, raw] = part.split('=');
    const count = Number(raw);
    if (!isKeyType(keyType) || !Number.isInteger(count) || count < 0) {
      throw new ConfigError('POOL_TARGETS must look like "RSA-2048=500,EC-P256=200"', 'POOL_TARGETS');
    }
    targets[keyType] = count;
  }
  return targets;
}
