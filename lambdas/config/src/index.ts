export { loadAwsConfig, loadConfig, loadHsmConfig } from './config';
export { str } from './readers';
export { ConfigError } from './errors';
export { loadPipelineConfig, type PipelineConfig } from './pipeline-config';
export { type ApiLimits, apiLimitsProblem } from './api-limits';
export { loadPoolConfig, loadRequestsConfig } from './pool-config';
export { keygenTargets, parseKeyCounts } from './pool-targets';
export {
  type KeygenPolicyConfig,
  type KeygenPolicyName,
  loadKeygenPolicyConfig,
  pooledKeyTypes,
} from './keygen-config';
export type {
  AppConfig,
  AwsConfig,
  Env,
  HsmConfig,
  HsmProfileName,
  ObjectTarget,
  PinSource,
  PoolConfig,
  RequestsConfig,
} from './types';
export { type CaCertsSource, type CaConfig, DEFAULT_CA_POLICY_OID, loadCaConfig, pkiUrls } from './ca-config';
export { type AuditConfig, loadAuditConfig } from './audit-config';
export {
  type IdentityConfig,
  isFetchableUrl,
  type JwksSource,
  loadIdentityConfig,
  parseJwksSource,
  type TrustedIssuer,
} from './identity-config';
export { type PlanningConfig, loadPlanningConfig } from './planning-config';
