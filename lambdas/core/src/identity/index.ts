export {
  checkSignApproval,
  expectedApproval,
  PARAM_SIGN_REQUEST,
  SCOPE_SIGN,
  SIGN_APPROVAL_TYPE,
  USER_SIGNATURE_CLAIM,
} from './approval';
export {
  type AssertionBinding,
  assertionNonce,
  bindingLines,
  FORMAT_OPEN,
  bindingOf,
  credentialDigest,
  type CredentialUse,
  isCredentialBinding,
  isManifestBinding,
  type ManifestBinding,
  manifestBindingLines,
  type ManifestDocument,
  manifestHash,
  manifestLines,
  MAX_DOCUMENTS,
  type RequestBinding,
  requestBindingOf,
} from './binding';
export {
  assertionReplayKey,
  checkAssertionClaims,
  checkRequestObjectClaims,
  requestObjectReplayKey,
} from './claims';
export { AssertionError, IdentityProviderUnavailableError } from './errors';
export {
  authnRequestId,
  decodeDssEvidence,
  encodeDssEvidence,
  isDssEvidence,
  MAX_DSS_EVIDENCE_LENGTH,
  sadRequestId,
} from './dss-evidence';
export { EvidenceVerifier } from './evidence-verifier';
export {
  checkSamlAssertion,
  checkSamlValidity,
  checkSignerAttributes,
  checkSignMessageDigest,
  SIGN_MESSAGE_DIGEST_ATTRIBUTE,
  type SamlAssertionFacts,
  type SamlExpectations,
} from './saml';
export { claimSources, signerFromClaims, SWEDISH_CLAIM_MAPPING, SWEDISH_OIDC_CLAIMS } from './mapping';
export type {
  AssertionPolicy,
  AssertionReplayStore,
  AssertionVerifier,
  ClaimMapping,
  AuthenticationContext,
  IdentityEvidence,
  SignerIdentity,
  SubjectField,
  VerifiedAssertion,
  VerifyOptions,
} from './types';
export {
  characterProblem,
  composeSignMessage,
  DOCUMENT_NAME_PATTERN,
  MAX_COMPOSED_SIGN_MESSAGE_LENGTH,
  MAX_SIGN_MESSAGE_LENGTH,
  SIGN_MESSAGE_MIME_TYPES,
  SIGN_MESSAGE_TEXT_PATTERN,
  type SignMessage,
  SignMessageError,
  signMessageHash,
  validateSignMessage,
} from './sign-message';
export {
  AUTH_CONTEXT_OID,
  CLIENT_VOUCHED_AUTHN_CONTEXT,
  SACI_CONTEXT_TYPE,
  samlAuthContextXml,
  vouchedAttribute,
} from './auth-context';
export {
  type DirectoryStringKind,
  InvalidIdentityError,
  isIsoCountryCode,
  SUBJECT_OIDS,
  subjectAttributes,
  validateSignerIdentity,
} from './certificate-profile';
