export { loadAwsConfig, loadConfig, loadHsmConfig } from './config';
export { int, type IntegerRule, oneOf, str } from './readers';
export { ConfigError } from './errors';
export { ENV } from './env-names';
export { loadPipelineConfig, type PipelineConfig } from './pipeline-config';
export {
  type ApiLimits,
  apiLimitsProblem,
  type CscCallerLimits,
  DEFAULT_CSC_CALLER_LIMITS,
} from './api-limits';
export { loadPoolConfig, loadRequestsConfig, POOL_EMPTY_POLICIES, POOL_RULES } from './pool-config';
export { DEFAULT_POOL_TARGETS, keygenTargets, parseKeyCounts } from './pool-targets';
export { loadKeygenPolicyConfig, pooledKeyTypes } from './keygen-config';
export type {
  AppConfig,
  AwsConfig,
  Env,
  HsmConfig,
  HsmProfileName,
  ObjectTarget,
  PinSource,
  SecretSource,
  PoolConfig,
  RequestsConfig,
} from './types';
export { type CaCertsSource, type CaConfig, DEFAULT_CA_POLICY_OID, loadCaConfig, pkiUrls } from './ca-config';
export { AUDIT_CHECKPOINT_INTERVAL, type AuditConfig, loadAuditConfig } from './audit-config';
export {
  DEFAULT_IDENTITY_CLIENT_ID,
  IDENTITY_MODES,
  type IdentityConfig,
  identityModeMissing,
  isFetchableUrl,
  type JwksSource,
  loadIdentityConfig,
  parseJwksSource,
  type TrustedIssuer,
} from './identity-config';
export { type CscConfig, cscSecretSources, loadCscConfig } from './csc-config';
export { type DssExtConfig, loadDssExtConfig } from './dssext-config';
export {
  type ApiFunctionConfig,
  type AuditCheckpointFunctionConfig,
  type CaFunctionConfig,
  type CaSideFunctionConfig,
  type CscFunctionConfig,
  type DssExtFunctionConfig,
  type JwksRefreshFunctionConfig,
  type KeygenFunctionConfig,
  type QueueFunctionConfig,
  type SignerFunctionConfig,
  loadApiFunctionConfig,
  loadAuditCheckpointFunctionConfig,
  loadCaFunctionConfig,
  loadCaSideFunctionConfig,
  loadCscFunctionConfig,
  loadDssExtFunctionConfig,
  loadJwksRefreshFunctionConfig,
  loadKeygenFunctionConfig,
  loadQueueFunctionConfig,
  loadSignerFunctionConfig,
} from './function-config';
