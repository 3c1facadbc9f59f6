export { createDssEvidenceVerifier, dssServiceOf, federationOf } from './create';
export { DssEvidenceVerifier } from './evidence-verifier';
export { verifySamlAssertion } from './assertion';
export { readFederationMetadata, MetadataUntrustedError, type IdentityProviderEntry } from './metadata';
export { verifySad, SAD_ATTRIBUTE, type SadExpectations } from './sad';
export {} from './namespaces';
export { authnRequestForm, readSamlResponse, spMetadataXml, type ServiceProvider } from './sp-login';
export { SamlServiceProvider } from './service-provider';
export { pemXmlSigner } from './key-signer';
