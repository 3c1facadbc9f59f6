import { AssertionError } from './errors';
import { SUBJECT_OIDS } from './certificate-profile';
import type { AttributeSource, AuthenticationContext, SubjectField } from './types';

/**
 * The Authentication Context extension (RFC 7773) of a leaf certificate: which identity provider
 * authenticated the signer, when, at which level, with which assertion, for which service, and which
 * attribute of the assertion each subject attribute came from. ELN-0608 requires it with one SAML
 * Authentication Context Information element (`saci`), which this module writes as XML from the data of
 * a verified assertion. Pure: the PKI module puts the DER around it.
 */

/** id-ce-authContext (RFC 7773 section 2). */
export const AUTH_CONTEXT_OID = '1.2.752.201.5.1';
/** The contextType of the SAML Authentication Context Information (RFC 7773 section 3). */
export const SACI_CONTEXT_TYPE = 'http://id.elegnamnden.se/auth-cont/1.0/saci';
const SAML_ASSERTION_NS = 'urn:oasis:names:tc:SAML:2.0:assertion';

/**
 * The level a request object's client stands for: it vouches for a person it authenticated itself, and
 * no identity provider's `acr` exists. A URI under the documentation arc of the default policy OID
 * (docs/certificate-profile.md).
 */
export const CLIENT_VOUCHED_AUTHN_CONTEXT = 'urn:oid:1.3.6.1.4.1.32473.1.2';

/**
 * SAML attribute names (ELN-0604, as the Swedish OpenID Connect claims specification maps them) of the
 * claims a subject attribute can come from. A claim without a SAML counterpart keeps its claim name.
 */
const SAML_NAMES: Readonly<Record<string, { readonly name: string; readonly friendlyName: string }>> = {
  'https://id.oidc.se/claim/personalIdentityNumber': {
    name: 'urn:oid:1.2.752.29.4.13',
    friendlyName: 'personalIdentityNumber',
  },
  given_name: { name: 'urn:oid:2.5.4.42', friendlyName: 'givenName' },
  family_name: { name: 'urn:oid:2.5.4.4', friendlyName: 'sn' },
  name: { name: 'urn:oid:2.16.840.1.113730.3.1.241', friendlyName: 'displayName' },
};

/** The attribute a claim becomes in the extension. */
export function claimAttribute(field: SubjectField, claim: string, value: string): AttributeSource {
  const known = Object.hasOwn(SAML_NAMES, claim) ? SAML_NAMES[claim] : undefined;
  return known
    ? { field, name: known.name, friendlyName: known.friendlyName, value }
    : { field, name: claim, value };
}

/** A value a request object's client vouched for directly: named as the subject attribute itself. */
export function vouchedAttribute(field: SubjectField, value: string): AttributeSource {
  return { field, name: `urn:oid:${SUBJECT_OIDS[field]}`, value };
}

/** Longest value the extension carries (a URL, a level, a name): anything longer is no such value. */
const MAX_VALUE_LENGTH = 1024;

/**
 * XML 1.0 `Char` (section 2.2) minus the C0 controls other than tab, line feed and carriage return:
 * everything else (other controls, lone surrogates, U+FFFE, U+FFFF) cannot appear in XML at all, not
 * even as a character reference.
 */
const XML_CHARS = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

function checked(what: string, value: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_VALUE_LENGTH) {
    throw new AssertionError(
      'ASSERTION_CLAIMS_INVALID',
      `authentication context ${what} is missing or too long`,
    );
  }
  if (!XML_CHARS.test(value)) {
    throw new AssertionError(
      'ASSERTION_CLAIMS_INVALID',
      `authentication context ${what} has characters XML cannot carry`,
    );
  }
  return value;
}

/**
 * Escapes for an attribute value in double quotes and for character data: `&` `<` `>` `"` `'`, and tab,
 * line feed and carriage return as character references (an attribute value's parser would otherwise
 * normalise them to spaces, XML 1.0 section 3.3.3).
 */
function escapeXml(value: string): string {
  return value.replace(/[&<>"'\t\n\r]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** xs:dateTime in UTC, to the second (auth_time and iat are whole seconds). */
function instant(epochMs: number): string {
  if (!Number.isFinite(epochMs)) {
    throw new AssertionError('ASSERTION_CLAIMS_INVALID', 'authentication context instant is not a time');
  }
  return new Date(Math.floor(epochMs / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

const attr = (name: string, what: string, value: string): string =>
  ` ${name}="${escapeXml(checked(what, value))}"`;

/**
 * The `<saci:SAMLAuthContext>` document (RFC 7773 section 3, ELN-0608 2.3.2): `<saci:AuthContextInfo>`
 * with IdentityProvider, AuthenticationInstant, AuthnContextClassRef, AssertionRef and ServiceID, and
 * `<saci:IdAttributes>` with one `<saci:AttributeMapping Type="rdn" Ref="<subject attribute OID>">` per
 * subject attribute taken from the assertion, holding the `<saml:Attribute>` with the value obtained.
 * Compact (no XML declaration, no whitespace, namespaces declared once); every value escaped. Throws
 * AssertionError (ASSERTION_CLAIMS_INVALID) for a value XML cannot carry, naming the field, not the value.
 */
export function samlAuthContextXml(context: AuthenticationContext): string {
  const info =
    '<saci:AuthContextInfo' +
    attr('IdentityProvider', 'identity provider', context.identityProvider) +
    ` AuthenticationInstant="${instant(context.authenticationInstant)}"` +
    attr('AuthnContextClassRef', 'level', context.authnContextClassRef) +
    attr('AssertionRef', 'assertion reference', context.assertionRef) +
    attr('ServiceID', 'service', context.serviceId) +
    '/>';
  const mappings = context.attributes.map(
    (a) =>
      `<saci:AttributeMapping Type="rdn" Ref="${SUBJECT_OIDS[a.field]}">` +
      '<saml:Attribute' +
      attr('Name', `attribute name of ${a.field}`, a.name) +
      (a.friendlyName === undefined
        ? ''
        : attr('FriendlyName', `friendly name of ${a.field}`, a.friendlyName)) +
      `><saml:AttributeValue>${escapeXml(checked(`value of ${a.field}`, a.value))}</saml:AttributeValue>` +
      '</saml:Attribute></saci:AttributeMapping>',
  );
  return (
    `<saci:SAMLAuthContext xmlns:saci="${SACI_CONTEXT_TYPE}" xmlns:saml="${SAML_ASSERTION_NS}">` +
    info +
    (mappings.length > 0 ? `<saci:IdAttributes>${mappings.join('')}</saci:IdAttributes>` : '') +
    '</saci:SAMLAuthContext>'
  );
}
