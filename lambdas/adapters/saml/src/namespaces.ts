/** SAML 2.0 and the Swedish eID framework's extensions, as the readers here name them. */
export const SAML_NS = {
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
  md: 'urn:oasis:names:tc:SAML:2.0:metadata',
  mdattr: 'urn:oasis:names:tc:SAML:metadata:attribute',
  psc: 'http://id.swedenconnect.se/authn/1.0/principal-selection/ns',
} as const;

export const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
export const POST_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
export const ASSURANCE_CERTIFICATION = 'urn:oasis:names:tc:SAML:attribute:assurance-certification';
export const ENTITY_CATEGORY = 'http://macedir.org/entity-category';
