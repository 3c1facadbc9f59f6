/** The namespaces and identifiers of OASIS DSS 1.0 with the Swedish eID framework's csig extension. */
export const DSS_NS = {
  dss: 'urn:oasis:names:tc:dss:1.0:core:schema',
  csig: 'http://id.elegnamnden.se/csig/1.1/dss-ext/ns',
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
} as const;

/** The DSS profile of the framework (ELN-0607 §2.1): SignRequest and SignResponse carry it. */
export const DSS_EXT_PROFILE = 'http://id.elegnamnden.se/csig/1.1/dss-ext/profile';

/** NameID format of IdentityProvider, SignRequester and SignService. */
export const ENTITY_FORMAT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:entity';

/** The SignRequestExtension versions we answer (absent means 1.1); the response echoes the request's. */
export const SUPPORTED_VERSIONS = ['1.1', '1.2', '1.3', '1.4', '1.5'] as const;

/** RequestedSignatureAlgorithm when the request names none (ELN-0607 §2.1.3.7). */
export const DEFAULT_SIGNATURE_ALGORITHM = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
