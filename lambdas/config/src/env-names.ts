/**
 * The names of the environment variables the CDK app writes into the functions' environments and the
 * loaders of this package read: one definition for both sides (`str(env, ENV.HSM_PIN_SOURCE, ...)` here,
 * `environment: { [ENV.HSM_PIN_SOURCE]: ... }` in cdk/). Table and queue variables come from the resource
 * definitions (`TABLES[].envVar`, `QUEUES[].envVar`); docs/configuration.md describes every variable.
 */
const NAMES = [
  'API_KEY_PRINCIPALS',
  'AUDIT_ANCHOR_TARGET',
  'AUDIT_CHECKPOINT_INTERVAL_SECONDS',
  'CA_CERTS_SOURCE',
  'CA_FUNCTION_NAME',
  'CA_HSM_PIN_SOURCE',
  'CRL_FUNCTION_NAME',
  'CSC_BASE_URL',
  'CSC_CLIENTS',
  'CSC_IDP_CLIENT_KEY',
  'CSC_IDP_ISSUER',
  'CSC_IDP_REDIRECT_URI',
  'DSSEXT_BASE_URL',
  'DSSEXT_CLIENTS',
  'DSSEXT_DEFAULT_LOA',
  'DSSEXT_FEDERATION_METADATA',
  'DSSEXT_METADATA_TRUST',
  'DSSEXT_SERVICE_KEY',
  'DSSEXT_SIGN_SERVICE_ENTITY_ID',
  'DSSEXT_SP_ENTITY_ID',
  'HSM_MODULE_PATH',
  'HSM_PIN_SOURCE',
  'HSM_PROFILE',
  'HSM_TOKEN_LABEL',
  'HSM_WRAP_KEY_LABEL',
  'IDENTITY_ACCEPTED_ACR',
  'IDENTITY_CLIENT_ID',
  'IDENTITY_CLIENT_KEYS',
  'IDENTITY_MODE',
  'IDENTITY_TRUSTED_ISSUERS',
  'KEYGEN_POLICY',
  'OCSP_FUNCTION_NAME',
  'OCSP_HSM_PIN_SOURCE',
  'PKI_BASE_URL',
  'PKI_PUBLISH_TARGET',
  'POOL_BUNDLE_SIZE',
  'POOL_EMPTY_POLICY',
  'POOL_FALLBACK_MAX_IN_FLIGHT',
  'POOL_FALLBACK_WAIT_MS',
  'POOL_SHARDS',
  'POOL_TARGETS',
  'REVOKE_FUNCTION_NAME',
  'SIGNER_CONCURRENCY',
  'TSA_FUNCTION_NAME',
  'TSA_HSM_PIN_SOURCE',
] as const;

type EnvName = (typeof NAMES)[number];

/** `ENV.NAME` is the string `'NAME'`, typed as that literal. */
export const ENV = Object.freeze(Object.fromEntries(NAMES.map((name) => [name, name]))) as {
  readonly [Name in EnvName]: Name;
};
