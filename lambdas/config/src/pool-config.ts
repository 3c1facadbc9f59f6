import { int, integer, oneOf, type IntegerRule } from './readers';
import type { Env, PoolConfig, RequestsConfig } from './types';
import { ENV } from './env-names';

const DAY_SECONDS = 86_400;

/** The pool settings a deployment sets too (cdk/lib/settings.ts): defaults and bounds. */
export const POOL_RULES = {
  shards: { fallback: 8, min: 1, max: 256 },
  bundleSize: { fallback: 10, min: 1, max: 100 },
  fallbackMaxInFlight: { fallback: 2, min: 1, max: 1000 },
  fallbackWaitMs: { fallback: 2000, min: 0, max: 60_000 },
} as const satisfies Record<string, IntegerRule>;

/** POOL_EMPTY_POLICY: generate a key on the fly, or refuse with POOL_EMPTY. */
export const POOL_EMPTY_POLICIES = ['fallback', 'reject'] as const;

/** Key pool settings: sharding, key lifetime, what to do when it runs dry, how fast to fill it. */
export function loadPoolConfig(env: Env): PoolConfig {
  return {
    shards: integer(env, ENV.POOL_SHARDS, POOL_RULES.shards),
    bundleSize: integer(env, ENV.POOL_BUNDLE_SIZE, POOL_RULES.bundleSize),
    keyMaxAgeSeconds: int(env, 'POOL_KEY_MAX_AGE_SECONDS', 30 * DAY_SECONDS, 60, 365 * DAY_SECONDS),
    emptyPolicy: oneOf(env, ENV.POOL_EMPTY_POLICY, POOL_EMPTY_POLICIES, 'fallback'),
    retryAfterSeconds: int(env, 'POOL_RETRY_AFTER_SECONDS', 30, 1, 3600),
    fallbackMaxInFlight: integer(env, ENV.POOL_FALLBACK_MAX_IN_FLIGHT, POOL_RULES.fallbackMaxInFlight),
    fallbackWaitMs: integer(env, ENV.POOL_FALLBACK_WAIT_MS, POOL_RULES.fallbackWaitMs),
    admissionOnTheFly: int(env, 'POOL_ADMISSION_ON_THE_FLY', 20, 0, 100_000),
    clientReserve: int(env, 'POOL_CLIENT_RESERVE', 10, 0, 100_000),
    fillParallelism: int(env, 'POOL_FILL_PARALLELISM', 2, 1, 64),
  };
}

/**
 * Sign request records: retention, the lease that lets a redelivery recover a crashed attempt, and the
 * reconciler that recovers requests whose message was lost. Its default quiet time (20 min) exceeds the
 * longest a healthy message stays in flight on AWS: 5 receives x 180 s visibility.
 */
export function loadRequestsConfig(env: Env): RequestsConfig {
  return {
    retentionSeconds: int(env, 'REQUEST_RETENTION_SECONDS', 30 * DAY_SECONDS, 60, 10 * 365 * DAY_SECONDS),
    attemptLeaseSeconds: int(env, 'SIGN_ATTEMPT_LEASE_SECONDS', 60, 1, 900),
    reconcileStaleAfterSeconds: int(env, 'RECONCILE_STALE_AFTER_SECONDS', 1200, 1, DAY_SECONDS),
    reconcileMaxRequeues: int(env, 'RECONCILE_MAX_REQUEUES', 2, 0, 100),
    reconcileBatchLimit: int(env, 'RECONCILE_BATCH_LIMIT', 1000, 1, 100_000),
  };
}
