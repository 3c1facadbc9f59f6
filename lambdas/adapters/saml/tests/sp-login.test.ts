/**
 * The SP side of the DSS-Ext door's login: AuthnRequests verified by xmlsec1, the SADRequest by the
 * framework's schema (xmllint), Responses as an identity provider signs them (xmlsec1) read, and the
 * forgeries refused.
 */
import { createPrivateKey, sign } from 'node:crypto';
import { AssertionError } from '@pipeline/core/identity';
import {
  authnRequestForm,
  readFederationMetadata,
  readSamlResponse,
  spMetadataXml,
  verifySamlAssertion,
  type ServiceProvider,
} from '@pipeline/adapters/saml';
import { parseXml, serializeXml } from '@pipeline/xml';
import { validateXsd } from '../../../../scripts/local/verify/xsd';
import {
  signedFederationMetadata,
  makeTestKey,
  samlAssertionXml,
  testKeyDirectory,
  xmlsec1SignById,
  xmlsec1Verifies,
} from '../../../test-support/saml-evidence';

const keys = testKeyDirectory();
afterAll(() => keys.remove());
const spKey = makeTestKey(keys.dir, 'sp');
const idpKey = makeTestKey(keys.dir, 'idp');
const operator = makeTestKey(keys.dir, 'operator');
const attacker = makeTestKey(keys.dir, 'attacker');
const IDP = 'https://idp.example/saml';
const FEDERATION = readFederationMetadata(signedFederationMetadata(keys.dir, IDP, idpKey, operator), [
  operator.certificate,
]);
const SP: ServiceProvider = {
  entityId: 'https://sign.example/sp',
  acsUrl: 'https://sign.example/dss/v1/saml/acs',
  signer: {
    signatureMethod: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    certificates: [spKey.certificate.raw],
    sign: async (octets) => sign('sha256', octets, createPrivateKey(spKey.keyPem)),
  },
};
const SIGN_MESSAGE =
  '<csig:SignMessage xmlns:csig="http://id.elegnamnden.se/csig/1.1/dss-ext/ns" MustShow="true" MimeType="text">' +
  `<csig:Message>${Buffer.from('I sign the lease.').toString('base64')}</csig:Message></csig:SignMessage>`;

const AUTHN_REQUEST_ID = 'ID:urn:oasis:names:tc:SAML:2.0:protocol:AuthnRequest';

describe('authnRequestForm', () => {
  it('posts a signed AuthnRequest with ForceAuthn, the SignMessage unchanged, PrincipalSelection, SADRequest and RequesterID', async () => {
    const form = await authnRequestForm(
      {
        id: '_req1',
        issueInstant: new Date(),
        idp: FEDERATION.get(IDP)!,
        loa: ['http://id.elegnamnden.se/loa/1.0/loa3'],
        requesterId: 'https://eservice.example/sp',
        signMessageXml: SIGN_MESSAGE,
        principalSelection: [
          { name: 'urn:oid:1.2.752.29.4.13', value: '195207092072' },
          { name: 'urn:oid:2.5.4.42', value: 'Tove' },
        ],
        sadRequest: { id: '_sad1', signRequestId: 'f'.repeat(32), docCount: 3 },
        relayState: 'flow-1',
      },
      SP,
    );
    expect(form.action).toBe('https://idp.example/sso');
    expect(form.fields.RelayState).toBe('flow-1');
    const xml = Buffer.from(form.fields.SAMLRequest!, 'base64').toString('utf8');
    expect(xmlsec1Verifies(keys.dir, xml, spKey.certFile, AUTHN_REQUEST_ID)).toBe(true);
    expect(
      xmlsec1Verifies(
        keys.dir,
        xml.replace('ForceAuthn="true"', 'ForceAuthn="false"'),
        spKey.certFile,
        AUTHN_REQUEST_ID,
      ),
    ).toBe(false);
    const root = parseXml(xml).documentElement;
    expect(root.getAttribute('ForceAuthn')).toBe('true');
    expect(root.getAttribute('Destination')).toBe('https://idp.example/sso');
    // The signature right after the Issuer, as the schema's sequence wants it.
    const elements = Array.from(root.childNodes as unknown as ArrayLike<Node>).filter(
      (n) => n.nodeType === 1,
    ) as Element[];
    expect(elements.map((e) => e.localName)).toEqual([
      'Issuer',
      'Signature',
      'Extensions',
      'NameIDPolicy',
      'RequestedAuthnContext',
      'Scoping',
    ]);
    expect(xml).toContain(SIGN_MESSAGE);
    expect(xml).toContain('<psc:MatchValue Name="urn:oid:1.2.752.29.4.13">195207092072</psc:MatchValue>');
    expect(xml).not.toContain('urn:oid:2.5.4.42');
    expect(xml).toContain('<samlp:RequesterID>https://eservice.example/sp</samlp:RequesterID>');
    const sad = root.getElementsByTagNameNS('http://id.elegnamnden.se/csig/1.1/sap/ns', 'SADRequest')[0]!;
    expect(validateXsd(serializeXml(sad))).toEqual({ valid: true, errors: '' });
  });
});

describe('readSamlResponse', () => {
  const NOW = Date.now();
  function assertion(): string {
    const xml = samlAssertionXml({
      id: '_a1',
      issuer: IDP,
      inResponseTo: '_req1',
      recipient: SP.acsUrl,
      audience: SP.entityId,
      now: NOW,
      attributes: { 'urn:oid:1.2.752.29.4.13': '195207092072' },
    });
    return xmlsec1SignById(keys.dir, xml, '_a1', 'Assertion', idpKey).replace(/^<\?xml[^>]*>\s*/, '');
  }
  function response(
    options: {
      status?: string;
      second?: string;
      destination?: string;
      inResponseTo?: string;
      body?: string;
    } = {},
  ): string {
    const status =
      `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:${options.status ?? 'Success'}">` +
      (options.second === undefined ? '' : `<samlp:StatusCode Value="${options.second}"/>`) +
      '</samlp:StatusCode></samlp:Status>';
    return (
      '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"' +
      ` ID="_r1" Version="2.0" IssueInstant="${new Date(NOW).toISOString()}" Destination="${options.destination ?? SP.acsUrl}"` +
      ` InResponseTo="${options.inResponseTo ?? '_req1'}"><saml:Issuer>${IDP}</saml:Issuer><!--SIG-->${status}` +
      `${options.body ?? (options.status === undefined ? assertion() : '')}</samlp:Response>`
    );
  }
  const signed = (xml: string, key = idpKey): string =>
    Buffer.from(xmlsec1SignById(keys.dir, xml, '_r1', 'Response', key)).toString('base64');
  const ctx = {
    identityProviders: FEDERATION,
    expectedIssuer: IDP,
    expectedInResponseTo: '_req1',
    acsUrl: SP.acsUrl,
  };

  it('returns the assertion, which verifies standalone with its own signature', () => {
    const read = readSamlResponse(signed(response()), ctx);
    expect(read.kind).toBe('assertion');
    if (read.kind !== 'assertion') return;
    expect(verifySamlAssertion(read.assertionXml, FEDERATION)).toMatchObject({
      id: '_a1',
      inResponseTo: '_req1',
    });
  });

  it.each([
    ['cancel', 'Responder', 'http://id.elegnamnden.se/status/1.0/cancel'],
    ['fraud', 'Responder', 'http://id.elegnamnden.se/status/1.0/possibleFraud'],
    ['unknown-principal', 'Responder', 'urn:oasis:names:tc:SAML:2.0:status:UnknownPrincipal'],
    ['no-authn-context', 'Responder', 'urn:oasis:names:tc:SAML:2.0:status:NoAuthnContext'],
    ['failed', 'Responder', 'urn:oasis:names:tc:SAML:2.0:status:AuthnFailed'],
  ])('maps a refusal to %s', (reason, status, second) => {
    expect(readSamlResponse(signed(response({ status, second })), ctx)).toEqual({ kind: 'refused', reason });
  });

  const codeOf = (encoded: string): string => {
    try {
      readSamlResponse(encoded, ctx);
    } catch (err) {
      if (err instanceof AssertionError) return err.code;
      throw err;
    }
    return 'accepted';
  };

  it.each([
    [
      'signed by a key not in the metadata',
      () => signed(response(), attacker),
      'ASSERTION_SIGNATURE_INVALID',
    ],
    [
      'unsigned',
      () => Buffer.from(response().replace('<!--SIG-->', '')).toString('base64'),
      'ASSERTION_SIGNATURE_INVALID',
    ],
    [
      'altered after signing',
      () =>
        Buffer.from(
          Buffer.from(signed(response()), 'base64').toString('utf8').replace('Success', 'Requester'),
        ).toString('base64'),
      'ASSERTION_SIGNATURE_INVALID',
    ],
    [
      'for another recipient',
      () => signed(response({ destination: 'https://attacker.example/acs' })),
      'ASSERTION_AUDIENCE_MISMATCH',
    ],
    [
      'answering another AuthnRequest',
      () => signed(response({ inResponseTo: '_other' })),
      'ASSERTION_BINDING_MISMATCH',
    ],
    [
      'with a second assertion',
      () => signed(response({ body: assertion() + assertion().replace('_a1', '_a2') })),
      'ASSERTION_MALFORMED',
    ],
  ])('refuses a response %s', (_, make, code) => {
    expect(codeOf(make())).toBe(code);
  });

  it('refuses an assertion inserted after the response was signed (wrapping)', () => {
    const xml = Buffer.from(signed(response()), 'base64').toString('utf8');
    const wrapped = xml.replace('<samlp:Status>', `${assertion().replace('_a1', '_evil')}<samlp:Status>`);
    expect(codeOf(Buffer.from(wrapped).toString('base64'))).toBe('ASSERTION_SIGNATURE_INVALID');
  });
});

describe('spMetadataXml', () => {
  it('declares a signature service that signs its requests and wants signed assertions', () => {
    const xml = spMetadataXml({
      entityId: SP.entityId,
      acsUrl: SP.acsUrl,
      signingCertificateDer: spKey.certificate.raw,
    });
    const root = parseXml(xml).documentElement;
    expect(root.getAttribute('entityID')).toBe(SP.entityId);
    expect(xml).toContain('http://id.elegnamnden.se/st/1.0/sigservice');
    expect(xml).toContain('AuthnRequestsSigned="true" WantAssertionsSigned="true"');
    expect(xml).toContain(`Location="${SP.acsUrl}"`);
  });
});
