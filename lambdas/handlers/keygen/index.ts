/**
 * Scheduled (EventBridge) -> this function (reserved concurrency 1): removes expired keys and fills the
 * pool up to its target per key type, generating in the HSM and stopping well before the function's
 * deadline so nothing is left half-written.
 */
import type { Context } from 'aws-lambda';
import { PowertoolsPoolMetrics } from '../../adapters/metrics/src';
import { KEY_TYPES, fanOutMetrics, fillPool, type KeyType, type PoolMetrics } from '../../core/src';
import { keygenTargets } from './targets';
import { sharedHsm } from '../shared/hsm';
import { createLogger, wire } from '../shared/wiring';

const logger = createLogger('keygen');
const { config, pool, keyPool } = wire();
const powertools = PowertoolsPoolMetrics.create();
/** Time kept in reserve at the end of an invocation: the last batch must be written before the deadline. */
const DEADLINE_MARGIN_MS = 20_000;

export interface KeygenResult {
  readonly generated: Partial<Record<KeyType, number>>;
  readonly expiredRemoved: number;
  readonly available: Partial<Record<KeyType, number>>;
  readonly targets: Partial<Record<KeyType, number>>;
}

/** Optional extra sink (the local runner passes its in-memory metrics for the health endpoint). */
export async function runKeygen(context: Context, extraMetrics?: PoolMetrics): Promise<KeygenResult> {
  const metrics = extraMetrics ? fanOutMetrics(powertools, extraMetrics) : powertools;
  const hsm = await sharedHsm();
  const now = Date.now();
  const deadline = now + Math.max(0, context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS);
  const targets = keygenTargets();
  let expiredRemoved = 0;
  for (const keyType of KEY_TYPES) {
    const removed = await keyPool.removeExpired(keyType, Math.floor(now / 1000));
    if (removed > 0) metrics.count('ExpiredKeysRemoved', keyType, removed);
    expiredRemoved += removed;
  }
  const before = await keyPool.available(KEY_TYPES);
  const generated: Partial<Record<KeyType, number>> = {};
  // Cheapest first: EC keys take milliseconds, so they are never starved by slow RSA generation.
  const order = [...KEY_TYPES].sort((a, b) => Number(a.startsWith('RSA')) - Number(b.startsWith('RSA')));
  for (const keyType of order) {
    const deficit = (targets[keyType] ?? 0) - (before[keyType] ?? 0);
    if (deficit <= 0 || Date.now() >= deadline) continue;
    const result = await fillPool(
      { hsm, pool: keyPool, metrics },
      {
        keyType,
        count: deficit,
        parallelism: pool.fillParallelism,
        deadline,
        wrapKeyLabel: config.hsm.wrapKeyLabel,
        hsmProfile: config.hsm.profile,
        maxAgeSeconds: pool.keyMaxAgeSeconds,
      },
    );
    generated[keyType] = result.stored;
    logger.info('pool filled', { keyType, ...result });
  }
  const available = await keyPool.available(KEY_TYPES);
  for (const keyType of KEY_TYPES) metrics.gauge('KeysAvailable', keyType, available[keyType] ?? 0);
  return { generated, expiredRemoved, available, targets };
}

export async function handler(_event: unknown, context: Context): Promise<KeygenResult> {
  return runKeygen(context);
}
