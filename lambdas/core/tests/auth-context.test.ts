/**
 * The saci document of the Authentication Context extension (RFC 7773, ELN-0608), read back by an
 * independent XML parser (python3 xml.etree): every field as given, hostile values escaped so that they
 * stay values, characters XML cannot carry refused by field name, and where each subject attribute came
 * from among the claims.
 */
import {
  AssertionError,
  CLIENT_VOUCHED_AUTHN_CONTEXT,
  SACI_CONTEXT_TYPE,
  SWEDISH_CLAIM_MAPPING,
  claimSources,
  samlAuthContextXml,
  vouchedAttribute,
  type AuthenticationContext,
} from '../src/identity';
import { parseSamlAuthContext } from '../../../scripts/local/verify/auth-context';

const PIN_CLAIM = 'https://id.oidc.se/claim/personalIdentityNumber';
const LOGIN: AuthenticationContext = {
  identityProvider: 'https://idp.example.se/oidc',
  authenticationInstant: Date.UTC(2026, 10, 26, 3, 4, 5, 678),
  authnContextClassRef: 'http://id.elegnamnden.se/loa/1.0/loa3',
  assertionRef: 'ab'.repeat(32),
  serviceId: 'signing-service',
  attributes: claimSources(
    { [PIN_CLAIM]: '197001011234', given_name: 'Åsa', family_name: 'Öberg', name: 'Åsa Öberg' },
    SWEDISH_CLAIM_MAPPING,
  ),
};

test('every field read back by an XML parser, in the saci namespace, time to the second in UTC', () => {
  const parsed = parseSamlAuthContext(samlAuthContextXml(LOGIN));
  expect(parsed.root).toBe(`{${SACI_CONTEXT_TYPE}}SAMLAuthContext`);
  expect(parsed.authContextInfo).toEqual({
    IdentityProvider: 'https://idp.example.se/oidc',
    AuthenticationInstant: '2026-11-26T03:04:05Z',
    AuthnContextClassRef: 'http://id.elegnamnden.se/loa/1.0/loa3',
    AssertionRef: 'ab'.repeat(32),
    ServiceID: 'signing-service',
  });
  expect(parsed.mappings).toEqual([
    { type: 'rdn', ref: '2.5.4.4', name: 'urn:oid:2.5.4.4', friendlyName: 'sn', values: ['Öberg'] },
    { type: 'rdn', ref: '2.5.4.42', name: 'urn:oid:2.5.4.42', friendlyName: 'givenName', values: ['Åsa'] },
    {
      type: 'rdn',
      ref: '2.5.4.5',
      name: 'urn:oid:1.2.752.29.4.13',
      friendlyName: 'personalIdentityNumber',
      values: ['197001011234'],
    },
    {
      type: 'rdn',
      ref: '2.5.4.3',
      name: 'urn:oid:2.16.840.1.113730.3.1.241',
      friendlyName: 'displayName',
      values: ['Åsa Öberg'],
    },
  ]);
});

test('compact: a typical login (four attributes) is under 1.4 kB of XML', () => {
  // No declaration, no whitespace, namespaces declared once: 1,329 bytes for this login.
  expect(Buffer.byteLength(samlAuthContextXml(LOGIN))).toBeLessThan(1400);
});

test('hostile values stay values: markup, entities, quotes and whitespace come back exactly', () => {
  const hostile = [
    '<saci:IdAttributes/>',
    'a&b&amp;c&#60;',
    '"/><saci:AuthContextInfo IdentityProvider="evil',
    "it's",
    '</saml:AttributeValue></saml:Attribute><saml:Attribute Name="x">',
    ']]><!-- --><?pi?><!DOCTYPE x [<!ENTITY e "boom">]>&e;',
    'tab\there\nline\r\nend',
  ];
  for (const value of hostile) {
    const parsed = parseSamlAuthContext(
      samlAuthContextXml({
        ...LOGIN,
        identityProvider: value,
        authnContextClassRef: value,
        serviceId: value,
        attributes: [
          { field: 'serialNumber', name: value, friendlyName: value, value },
          { field: 'givenName', name: 'n', value },
        ],
      }),
    );
    expect(parsed.authContextInfo.IdentityProvider).toBe(value);
    expect(parsed.authContextInfo.AuthnContextClassRef).toBe(value);
    expect(parsed.authContextInfo.ServiceID).toBe(value);
    expect(parsed.mappings).toHaveLength(2);
    expect(parsed.mappings[0]).toEqual({
      type: 'rdn',
      ref: '2.5.4.5',
      name: value,
      friendlyName: value,
      values: [value],
    });
    // Character data: the parser keeps the line breaks (a CR written as a reference survives).
    expect(parsed.mappings[1].values).toEqual([value]);
  }
});

test('characters XML cannot carry are refused by field name, never echoing the value', () => {
  for (const bad of ['nul\u0000', 'bell\u0007', 'esc\u001b[0m', 'lone\uD800', 'nonchar\uFFFE']) {
    for (const context of [
      { ...LOGIN, identityProvider: bad },
      { ...LOGIN, authnContextClassRef: bad },
      { ...LOGIN, attributes: [{ field: 'givenName' as const, name: 'given_name', value: bad }] },
    ]) {
      let error: unknown;
      try {
        samlAuthContextXml(context);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(AssertionError);
      expect((error as AssertionError).code).toBe('ASSERTION_CLAIMS_INVALID');
      expect((error as Error).message).not.toContain(bad);
    }
  }
  expect(() => samlAuthContextXml({ ...LOGIN, identityProvider: '' })).toThrow(AssertionError);
  expect(() => samlAuthContextXml({ ...LOGIN, serviceId: 'x'.repeat(1025) })).toThrow(AssertionError);
  expect(() => samlAuthContextXml({ ...LOGIN, authenticationInstant: Number.NaN })).toThrow(AssertionError);
});

test('claim sources: the value as the token carried it, no mapping for a made-up name or a configured country', () => {
  const prefixed = { ...SWEDISH_CLAIM_MAPPING, serialNumberPrefix: 'PNOSE-' };
  const withoutName = claimSources(
    { [PIN_CLAIM]: '197001011234', given_name: 'Åsa', family_name: 'Öberg' },
    prefixed,
  );
  expect(withoutName.map((a) => [a.field, a.name, a.value])).toEqual([
    ['surname', 'urn:oid:2.5.4.4', 'Öberg'],
    ['givenName', 'urn:oid:2.5.4.42', 'Åsa'],
    // The certificate says PNOSE-197001011234; the assertion said this.
    ['serialNumber', 'urn:oid:1.2.752.29.4.13', '197001011234'],
  ]);
  const countryClaim = { ...SWEDISH_CLAIM_MAPPING, country: { claim: 'country' } };
  const withCountry = claimSources(
    { [PIN_CLAIM]: '197001011234', given_name: 'A', family_name: 'B', name: 'A B', country: 'NO' },
    countryClaim,
  );
  // A claim without a SAML counterpart keeps its claim name.
  expect(withCountry[0]).toEqual({ field: 'country', name: 'country', value: 'NO' });
  expect(withCountry).toHaveLength(5);
});

test("a request object's attributes are the subject attributes the client vouched for", () => {
  expect(vouchedAttribute('serialNumber', '197001011234')).toEqual({
    field: 'serialNumber',
    name: 'urn:oid:2.5.4.5',
    value: '197001011234',
  });
  const parsed = parseSamlAuthContext(
    samlAuthContextXml({
      ...LOGIN,
      identityProvider: 'trusted-eservice',
      authnContextClassRef: CLIENT_VOUCHED_AUTHN_CONTEXT,
      attributes: [vouchedAttribute('country', 'SE')],
    }),
  );
  expect(parsed.authContextInfo.IdentityProvider).toBe('trusted-eservice');
  expect(parsed.mappings).toEqual([{ type: 'rdn', ref: '2.5.4.6', name: 'urn:oid:2.5.4.6', values: ['SE'] }]);
});
