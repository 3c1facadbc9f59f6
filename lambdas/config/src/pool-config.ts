import { int, oneOf } from './config';
import type { Env, PoolConfig, RequestsConfig } from './types';

const DAY_SECONDS = 86_400;

/** Key pool settings: sharding, key lifetime, what to do when it runs dry, how fast to fill it. */
export function loadPoolConfig(env: Env = process.env): PoolConfig {
  return {
    shards: int(env, 'POOL_SHARDS', 8, 1, 256),
    keyMaxAgeSeconds: int(env, 'POOL_KEY_MAX_AGE_SECONDS', 30 * DAY_SECONDS, 60, 365 * DAY_SECONDS),
    emptyPolicy: oneOf(env, 'POOL_EMPTY_POLICY', ['fallback', 'reject'] as const, 'fallback'),
    retryAfterSeconds: int(env, 'POOL_RETRY_AFTER_SECONDS', 30, 1, 3600),
    fillParallelism: int(env, 'POOL_FILL_PARALLELISM', 2, 1, 64),
  };
}

/** Sign request records: retention and the lease that lets a redelivery recover a crashed attempt. */
export function loadRequestsConfig(env: Env = process.env): RequestsConfig {
  return {
    retentionSeconds: int(env, 'REQUEST_RETENTION_SECONDS', 30 * DAY_SECONDS, 60, 10 * 365 * DAY_SECONDS),
    attemptLeaseSeconds: int(env, 'SIGN_ATTEMPT_LEASE_SECONDS', 60, 1, 900),
  };
}
