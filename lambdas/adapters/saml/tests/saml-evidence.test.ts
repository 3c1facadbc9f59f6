/**
 * SAML evidence as another implementation signs it: assertions and federation metadata signed by xmlsec1,
 * the SAD by jose; verified by the adapter, with the forgeries an attacker at the door would try.
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { AssertionError } from '@pipeline/core/identity';
import {
  MetadataUntrustedError,
  readFederationMetadata,
  SAD_ATTRIBUTE,
  verifySad,
  verifySamlAssertion,
  type IdentityProviderEntry,
  type SadExpectations,
} from '@pipeline/adapters/saml';

const dir = mkdtempSync(join(tmpdir(), 'saml-evidence-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function makeKey(name: string): { key: string; cert: string; x509: X509Certificate } {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, `${name}.key`),
      '-out',
      join(dir, `${name}.crt`),
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
    ],
    { stdio: 'ignore' },
  );
  const cert = join(dir, `${name}.crt`);
  return { key: join(dir, `${name}.key`), cert, x509: new X509Certificate(readFileSync(cert)) };
}

const idpKey = makeKey('idp');
const operator = makeKey('operator');
const attacker = makeKey('attacker');
const IDP = 'https://idp.example/saml';
const SIG_TEMPLATE =
  '<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:SignedInfo>' +
  '<ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/>' +
  '<ds:SignatureMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"/>' +
  '<ds:Reference URI="#ID_REF"><ds:Transforms><ds:Transform Algorithm="http://www.w3.org/2000/09/xmldsig#enveloped-signature"/>' +
  '<ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/></ds:Transforms>' +
  '<ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/><ds:DigestValue/></ds:Reference>' +
  '</ds:SignedInfo><ds:SignatureValue/><ds:KeyInfo><ds:X509Data/></ds:KeyInfo></ds:Signature>';

/** xmlsec1 signs the element whose ID is `id` (its template sits where the schema puts ds:Signature). */
function xmlsec1Sign(xml: string, id: string, node: string, key: { key: string; cert: string }): string {
  writeFileSync(join(dir, 'in.xml'), xml.replace('<!--SIG-->', SIG_TEMPLATE.replace('ID_REF', id)));
  return execFileSync(
    'xmlsec1',
    ['--sign', '--id-attr:ID', node, '--privkey-pem', `${key.key},${key.cert}`, join(dir, 'in.xml')],
    {
      encoding: 'utf8',
    },
  );
}

const NOW = new Date();
const iso = (ms: number): string => new Date(ms).toISOString();
function assertionXml(options: { issuer?: string; pnr?: string; extra?: string } = {}): string {
  return (
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_a1" Version="2.0" IssueInstant="${iso(NOW.getTime())}">` +
    `<saml:Issuer>${options.issuer ?? IDP}</saml:Issuer><!--SIG-->` +
    '<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:transient">t1</saml:NameID>' +
    '<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">' +
    `<saml:SubjectConfirmationData InResponseTo="_req" Recipient="https://sign.example/acs" NotOnOrAfter="${iso(NOW.getTime() + 300_000)}"/>` +
    '</saml:SubjectConfirmation></saml:Subject>' +
    `<saml:Conditions NotBefore="${iso(NOW.getTime() - 5_000)}" NotOnOrAfter="${iso(NOW.getTime() + 300_000)}">` +
    '<saml:AudienceRestriction><saml:Audience>https://sign.example/sp</saml:Audience></saml:AudienceRestriction></saml:Conditions>' +
    `<saml:AuthnStatement AuthnInstant="${iso(NOW.getTime() - 2_000)}"><saml:AuthnContext>` +
    '<saml:AuthnContextClassRef>http://id.elegnamnden.se/loa/1.0/loa3</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>' +
    '<saml:AttributeStatement><saml:Attribute Name="urn:oid:1.2.752.29.4.13" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri">' +
    `<saml:AttributeValue>${options.pnr ?? '195207092072'}</saml:AttributeValue></saml:Attribute>${options.extra ?? ''}</saml:AttributeStatement>` +
    '</saml:Assertion>'
  );
}

const b64 = (c: X509Certificate): string => c.raw.toString('base64');
function metadataXml(): string {
  return (
    '<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:mdattr="urn:oasis:names:tc:SAML:metadata:attribute" ' +
    'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" xmlns:psc="http://id.swedenconnect.se/authn/1.0/principal-selection/ns" ID="_fed" Name="local">' +
    '<!--SIG-->' +
    `<md:EntityDescriptor entityID="${IDP}"><md:Extensions><mdattr:EntityAttributes>` +
    '<saml:Attribute Name="urn:oasis:names:tc:SAML:attribute:assurance-certification"><saml:AttributeValue>http://id.elegnamnden.se/loa/1.0/loa3</saml:AttributeValue></saml:Attribute>' +
    '<saml:Attribute Name="http://macedir.org/entity-category"><saml:AttributeValue>http://id.elegnamnden.se/sprop/1.0/scal2</saml:AttributeValue></saml:Attribute>' +
    '</mdattr:EntityAttributes></md:Extensions>' +
    '<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" WantAuthnRequestsSigned="true">' +
    '<md:Extensions><psc:RequestedPrincipalSelection><psc:MatchValue Name="urn:oid:1.2.752.29.4.13"/></psc:RequestedPrincipalSelection></md:Extensions>' +
    `<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${b64(idpKey.x509)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
    '<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://idp.example/sso"/>' +
    '</md:IDPSSODescriptor></md:EntityDescriptor></md:EntitiesDescriptor>'
  );
}

const FEDERATION = readFederationMetadata(
  xmlsec1Sign(metadataXml(), '_fed', 'EntitiesDescriptor', operator),
  [operator.x509],
);

describe('readFederationMetadata', () => {
  it('reads the identity providers of metadata the operator signed', () => {
    const idp = FEDERATION.get(IDP) as IdentityProviderEntry;
    expect(idp.ssoPostUrl).toBe('https://idp.example/sso');
    expect(idp.signingCertificates[0]?.fingerprint256).toBe(idpKey.x509.fingerprint256);
    expect(idp.assuranceCertifications).toEqual(['http://id.elegnamnden.se/loa/1.0/loa3']);
    expect(idp.entityCategories).toEqual(['http://id.elegnamnden.se/sprop/1.0/scal2']);
    expect(idp.principalSelection).toEqual(['urn:oid:1.2.752.29.4.13']);
  });

  it('refuses metadata signed by another key, altered, or unsigned', () => {
    const byAttacker = xmlsec1Sign(metadataXml(), '_fed', 'EntitiesDescriptor', attacker);
    expect(() => readFederationMetadata(byAttacker, [operator.x509])).toThrow(MetadataUntrustedError);
    const signed = xmlsec1Sign(metadataXml(), '_fed', 'EntitiesDescriptor', operator);
    const swapped = signed.replace(b64(idpKey.x509), b64(attacker.x509));
    expect(() => readFederationMetadata(swapped, [operator.x509])).toThrow(MetadataUntrustedError);
    expect(() => readFederationMetadata(metadataXml().replace('<!--SIG-->', ''), [operator.x509])).toThrow(
      MetadataUntrustedError,
    );
  });
});

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof AssertionError) return err.code;
    throw err;
  }
  return 'accepted';
}

describe('verifySamlAssertion', () => {
  it('reads the facts of an assertion its identity provider signed', () => {
    const facts = verifySamlAssertion(xmlsec1Sign(assertionXml(), '_a1', 'Assertion', idpKey), FEDERATION);
    expect(facts).toMatchObject({
      id: '_a1',
      issuer: IDP,
      inResponseTo: '_req',
      recipient: 'https://sign.example/acs',
      audiences: ['https://sign.example/sp'],
      authnContextClassRef: 'http://id.elegnamnden.se/loa/1.0/loa3',
      attributes: [{ name: 'urn:oid:1.2.752.29.4.13', values: ['195207092072'] }],
    });
  });

  it.each<[string, () => string, string]>([
    [
      'signed by a key not in the metadata',
      () => xmlsec1Sign(assertionXml(), '_a1', 'Assertion', attacker),
      'ASSERTION_SIGNATURE_INVALID',
    ],
    [
      'altered after signing (another person)',
      () => xmlsec1Sign(assertionXml(), '_a1', 'Assertion', idpKey).replace('195207092072', '194911172296'),
      'ASSERTION_SIGNATURE_INVALID',
    ],
    ['unsigned', () => assertionXml().replace('<!--SIG-->', ''), 'ASSERTION_SIGNATURE_INVALID'],
    [
      'from an identity provider outside the federation',
      () => xmlsec1Sign(assertionXml({ issuer: 'https://rogue.example' }), '_a1', 'Assertion', idpKey),
      'ASSERTION_ISSUER_UNTRUSTED',
    ],
    [
      'not an assertion',
      () => '<saml:Response xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"/>',
      'ASSERTION_MALFORMED',
    ],
  ])('refuses an assertion %s', (_, make, code) => {
    expect(codeOf(() => verifySamlAssertion(make(), FEDERATION))).toBe(code);
  });
});

describe('verifySad', () => {
  const idp = FEDERATION.get(IDP) as IdentityProviderEntry;
  const EXPECTED: SadExpectations = {
    audience: 'https://sign.example/sp',
    sadRequestId: '_sad1',
    signRequestId: 'f'.repeat(32),
    docCount: 3,
    userIdAttribute: 'urn:oid:1.2.752.29.4.13',
    now: NOW.getTime(),
    clockSkewMs: 30_000,
  };
  async function sad(
    change: Record<string, unknown> = {},
    ext: Record<string, unknown> = {},
    key = idpKey.key,
  ): Promise<string> {
    const iat = Math.floor(NOW.getTime() / 1000);
    return new SignJWT({
      iss: IDP,
      aud: 'https://sign.example/sp',
      sub: '195207092072',
      jti: 'j1',
      iat,
      exp: iat + 300,
      seElnSadext: {
        ver: '1.0',
        irt: '_sad1',
        attr: 'urn:oid:1.2.752.29.4.13',
        loa: 'http://id.elegnamnden.se/loa/1.0/loa3',
        reqid: 'f'.repeat(32),
        docs: 3,
        ...ext,
      },
      ...change,
    })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .sign(createPrivateKey(readFileSync(key)));
  }
  async function factsWith(jwt: string) {
    const extra = `<saml:Attribute Name="${SAD_ATTRIBUTE}"><saml:AttributeValue>${jwt}</saml:AttributeValue></saml:Attribute>`;
    return verifySamlAssertion(xmlsec1Sign(assertionXml({ extra }), '_a1', 'Assertion', idpKey), FEDERATION);
  }
  async function outcome(jwt: string, expected = EXPECTED): Promise<string> {
    return verifySad(await factsWith(jwt), idp, expected).then(
      () => 'accepted',
      (err: unknown) => (err instanceof AssertionError ? err.message : String(err)),
    );
  }

  it('accepts a SAD that answers this SADRequest', async () => {
    expect(await outcome(await sad())).toBe('accepted');
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>, string]>([
    ['another SADRequest', {}, { irt: '_other' }, 'another SADRequest'],
    ['another sign request', {}, { reqid: 'e'.repeat(32) }, 'another sign request'],
    ['another number of documents', {}, { docs: 2 }, 'another number of documents'],
    [
      'another level of assurance',
      {},
      { loa: 'http://id.elegnamnden.se/loa/1.0/loa2' },
      'another level of assurance',
    ],
    ['another version', {}, { ver: '2.0' }, 'version'],
    ['another person', { sub: '194911172296' }, {}, 'another person'],
  ])('refuses a SAD for %s', async (_, change, ext, message) => {
    expect(await outcome(await sad(change, ext))).toContain(message);
  });

  it('refuses a SAD for another service, expired, or signed by another key', async () => {
    expect(await outcome(await sad({ aud: 'https://other.example/sp' }))).toContain('does not verify');
    expect(await outcome(await sad(), { ...EXPECTED, now: NOW.getTime() + 3_600_000 })).toContain(
      'does not verify',
    );
    expect(await outcome(await sad({}, {}, attacker.key))).toContain('does not verify');
  });
});
