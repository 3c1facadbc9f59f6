export {
  type AdmissionDecision,
  type AdmissionSettings,
  admitSignRequest,
  type OpenRequestCounts,
} from './admission';
export { requestWeight } from './request-weight';
export { type FallbackDecision, FallbackLimiter } from './fallback-limiter';
export { fillPool } from './fill-pool';
export { PrefetchingKeyClaimer } from './key-prefetch';
export { keySourceFor } from './key-source';
export {
  type KeygenCycleDeps,
  type KeygenCycleInput,
  type KeygenDecision,
  type KeygenPolicyName,
  type KeygenResult,
  runKeygenCycle,
} from './keygen-cycle';
export { decideKeygen } from './keygen-policy';
export {
  type AddKeysResult,
  type EmptyPoolPolicy,
  isKeyUsable,
  keyExpiresAt,
  type KeyPoolStore,
  type PoolHsm,
  type PoolKey,
  type PoolStatus,
  shardVisitOrder,
  shuffle,
} from './pool';
export {
  InMemoryPoolMetrics,
  type PoolCounterName,
  type PoolGaugeName,
  type PoolMetrics,
} from './pool-metrics';
