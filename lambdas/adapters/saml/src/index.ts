export { DssEvidenceVerifier, PERSONAL_IDENTITY_NUMBER, type DssEvidenceConfig } from './evidence-verifier';
export { verifySamlAssertion } from './assertion';
export { readFederationMetadata, MetadataUntrustedError, type IdentityProviderEntry } from './metadata';
export { verifySad, SAD_ATTRIBUTE, type SadExpectations } from './sad';
export { ASSURANCE_CERTIFICATION, ENTITY_CATEGORY, SAML_NS } from './namespaces';
