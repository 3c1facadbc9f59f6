export {
  authorizingClient,
  clientSecretMatches,
  type CscAuthorizationRequest,
  type CscClient,
  type CscScope,
  type CscSigning,
  nonceOf,
  parseAuthorizationRequest,
  pkceMatches,
  secretHash,
  signMessageFor,
} from './authorization';
export {
  checkSignAlgo,
  credentialById,
  credentialInfo,
  CSC_CREDENTIALS,
  DEFAULT_CREDENTIAL_ID,
  digestAlgorithmOf,
  digestOf,
  HASH_ALGORITHM_OIDS,
  MAX_SIGNATURES_PER_AUTHORIZATION,
  type OneTimeCredential,
} from './credentials';
export { CSC_ERRORS, CscError, type CscErrorCode, cscErrorFor } from './errors';
export {
  type CscCode,
  type CscFlow,
  type CscGrant,
  type CscLifetimes,
  type CscStore,
  grantOf,
  type TokenUse,
} from './grants';
export { CSC_METHODS, CSC_SPECS, cscInfo, type CscServiceDescription } from './info';
