export { DssEvidenceVerifier } from './evidence-verifier';
export { verifySamlAssertion } from './assertion';
export { readFederationMetadata, MetadataUntrustedError, type IdentityProviderEntry } from './metadata';
export { verifySad, SAD_ATTRIBUTE, type SadExpectations } from './sad';
export {} from './namespaces';
