export {
  approvalRequestOf,
  AUTHORIZATION_PARAMETERS,
  authorizedDigests,
  authorizingClient,
  clientSecretMatches,
  conformanceLevelOf,
  creationApprovalOf,
  type CscCredentialCreation,
  documentSigning,
  flowParams,
  type CscClient,
  type CscMethod,
  type CscDocumentSigning,
  type CscSigning,
  grantedAuthorizationDetails,
  nonceOf,
  parseAuthorizationRequest,
  pkceMatches,
  registeredClient,
  registeredRedirect,
  requestOfFlow,
  secretHash,
} from './authorization';
export {
  checkSignAlgo,
  type CredentialCertificate,
  credentialById,
  credentialInfo,
  CSC_CREDENTIALS,
  digestAlgorithmOf,
  digestOf,
} from './credentials';
export { CSC_ERRORS, CscError, cscErrorFor, cscErrorOf, type CscErrorCode } from './errors';
export {
  type CscCode,
  type CscFlow,
  type CscGrant,
  type CscLifetimes,
  type CscPendingResponse,
  type CscPushedRequest,
  type CscStore,
  grantOf,
  type TokenUse,
} from './grants';
export { seal, unseal } from './sealing';
export { cscInfo, type CscServiceDescription } from './info';
