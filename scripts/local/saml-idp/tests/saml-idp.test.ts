/**
 * The local SAML IdP against an SP made with @node-saml/node-saml (as the service's SP will be): signed
 * AuthnRequests over the HTTP-POST binding with a SignMessage, a PrincipalSelection and a SADRequest, the
 * login page driven with plain HTTP, and every Response judged by node-saml and by xmlsec1, with each
 * test knob's misbehaviour seen where a relying party would see it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SAML, ValidateInResponseTo, type SamlConfig } from '@node-saml/node-saml';
import { importX509, jwtVerify, decodeJwt } from 'jose';
import { LOA2_CITIZEN_INDEX, TEST_CITIZENS } from '../../idp/citizens';
import { LOA } from '../../idp/profile';
import { startSamlIdp, type Misbehaviour, type SamlIdp } from '../idp';
import { throwawayKeyPair, type KeyPair } from '../keys';
import { ATTRIBUTES, STATUS } from '../saml';

const SP_ENTITY_ID = 'http://127.0.0.1/test-sp/sigservice';
const ACS = 'http://127.0.0.1:9/test-sp/saml/acs';
const MESSAGE_B64 = 'SSBoZXJlYnkgY29uZmlybSB0aGF0IEkgd2FudCB0byBqb2luIGV4YW1wbGUuY29tIGFzIGEgY3VzdG9tZXI=';
const SPEC_DIGEST = 'http://www.w3.org/2001/04/xmlenc#sha256;0yKaSVsYeh+PX2Q6diqO2w89+a3Dm303tp3AVjgxwj0=';
const SAD_ID = '_752c30b3-30c1-49f0-ab04-a28909dc3b67';
const SIGN_REQUEST_ID = '70fabf30-d474-4d21-8463-2c6811005ce0';
const ASA = TEST_CITIZENS[0];

let idpKeys: KeyPair;
let spKeys: KeyPair;
let idp: SamlIdp;
let work: string;

const signMessageXml = (b64: string): string =>
  `<csig:SignMessage xmlns:csig="http://id.elegnamnden.se/csig/1.1/dss-ext/ns" MustShow="true" MimeType="text">` +
  `<csig:Message>${b64}</csig:Message></csig:SignMessage>`;
const principalXml = (pnr: string): string =>
  `<psc:PrincipalSelection xmlns:psc="http://id.swedenconnect.se/authn/1.0/principal-selection/ns">` +
  `<psc:MatchValue Name="urn:oid:1.2.752.29.4.13">${pnr}</psc:MatchValue></psc:PrincipalSelection>`;
const sadRequestXml =
  `<sap:SADRequest xmlns:sap="http://id.elegnamnden.se/csig/1.1/sap/ns" ID="${SAD_ID}">` +
  `<sap:RequesterID>${SP_ENTITY_ID}</sap:RequesterID><sap:SignRequestID>${SIGN_REQUEST_ID}</sap:SignRequestID>` +
  `<sap:DocCount>3</sap:DocCount><sap:RequestedVersion>1.0</sap:RequestedVersion></sap:SADRequest>`;

function spConfig(overrides: Partial<SamlConfig> = {}): SamlConfig {
  return {
    callbackUrl: ACS,
    entryPoint: idp?.ssoUrl ?? 'http://127.0.0.1:9/unused',
    issuer: SP_ENTITY_ID,
    audience: SP_ENTITY_ID,
    idpCert: idpKeys.certPem,
    privateKey: spKeys.keyPem,
    publicCert: spKeys.certPem,
    signatureAlgorithm: 'sha256',
    digestAlgorithm: 'sha256',
    authnRequestBinding: 'HTTP-POST',
    // The HTTP-POST binding carries the request as it is (node-saml would deflate it otherwise).
    skipRequestCompression: true,
    forceAuthn: true,
    authnContext: [LOA.loa3],
    racComparison: 'exact',
    identifierFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: true,
    validateInResponseTo: ValidateInResponseTo.always,
    samlAuthnRequestExtensions: {
      '#raw': signMessageXml(MESSAGE_B64) + principalXml(ASA.personalIdentityNumber) + sadRequestXml,
    },
    ...overrides,
  };
}

function field(html: string, name: string): string {
  const found = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!found) throw new Error(`no ${name} in ${html.slice(0, 300)}`);
  return found[1]
    .replace(/&#x2F;|&#47;/g, '/')
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"');
}

const post = (url: string, body: Record<string, string>): Promise<Response> =>
  fetch(url, { method: 'POST', body: new URLSearchParams(body), redirect: 'manual' });

/** Sends the SP's AuthnRequest and returns the IdP's answer (the login page or a refusal). */
async function sendRequest(sp: SAML): Promise<Response> {
  const form = await sp.getAuthorizeFormAsync('relay-1');
  return post(idp.ssoUrl, { SAMLRequest: field(form, 'SAMLRequest'), RelayState: 'relay-1' });
}

interface Outcome {
  readonly sp: SAML;
  readonly loginPage: string;
  readonly autoPost: string;
  readonly samlResponse: string;
  readonly xml: string;
}

async function login(
  action: 'approve' | 'cancel',
  options: { misbehave?: Misbehaviour; citizen?: string; sp?: Partial<SamlConfig> } = {},
): Promise<Outcome> {
  const sp = new SAML(spConfig(options.sp));
  const answer = await sendRequest(sp);
  const loginPage = await answer.text();
  expect(answer.status).toBe(200);
  idp.misbehaveNext(options.misbehave);
  const decided = await post(`${idp.url}/saml/idp/sso/decide`, {
    pending: field(loginPage, 'pending'),
    citizen: options.citizen ?? ASA.personalIdentityNumber,
    action,
  });
  expect(decided.status).toBe(200);
  const autoPost = await decided.text();
  const samlResponse = field(autoPost, 'SAMLResponse');
  return { sp, loginPage, autoPost, samlResponse, xml: Buffer.from(samlResponse, 'base64').toString('utf8') };
}

const validate = (o: Outcome): ReturnType<SAML['validatePostResponseAsync']> =>
  o.sp.validatePostResponseAsync({ SAMLResponse: o.samlResponse, RelayState: 'relay-1' });

/** xmlsec1's verdict on the signature of the element with that ID type (the Response or the assertion). */
function xmlsecVerifies(xml: string, idAttr: string, certPem: string): boolean {
  writeFileSync(join(work, 'doc.xml'), xml);
  writeFileSync(join(work, 'cert.pem'), certPem);
  try {
    execFileSync(
      'xmlsec1',
      [
        '--verify',
        '--id-attr:ID',
        idAttr,
        '--pubkey-cert-pem',
        join(work, 'cert.pem'),
        join(work, 'doc.xml'),
      ],
      { stdio: 'pipe' },
    );
    return true;
  } catch {
    return false;
  }
}
const assertionOf = (xml: string): string =>
  xml.slice(xml.indexOf('<saml:Assertion'), xml.indexOf('</saml:Assertion>') + '</saml:Assertion>'.length);
const ASSERTION_ID_ATTR = 'urn:oasis:names:tc:SAML:2.0:assertion:Assertion';
const RESPONSE_ID_ATTR = 'urn:oasis:names:tc:SAML:2.0:protocol:Response';

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'saml-idp-test-'));
  idpKeys = throwawayKeyPair('Test SAML IdP');
  spKeys = throwawayKeyPair('Test SP');
  const spMetadata = new SAML(spConfig()).generateServiceProviderMetadata(null, spKeys.certPem);
  idp = await startSamlIdp({ keys: idpKeys, spMetadata: [spMetadata], testKnobs: true });
});

afterAll(async () => {
  await idp?.close();
  rmSync(work, { recursive: true, force: true });
});

describe('metadata', () => {
  it('publishes the IdP entity, its signing key, the POST endpoint, LoAs, scal2 and principal selection', async () => {
    const answer = await fetch(`${idp.url}/saml/idp/metadata`);
    const xml = await answer.text();
    expect(answer.status).toBe(200);
    expect(idp.entityId).toBe(`${idp.url}/saml/idp`);
    expect(xml).toBe(idp.metadataXml);
    expect(xml).toContain(`entityID="${idp.entityId}"`);
    expect(xml).toContain('WantAuthnRequestsSigned="true"');
    expect(xml).toContain(`Location="${idp.url}/saml/idp/sso"`);
    for (const value of [LOA.loa3, LOA.loa2, 'http://id.elegnamnden.se/sprop/1.0/scal2']) {
      expect(xml).toContain(`<saml:AttributeValue>${value}</saml:AttributeValue>`);
    }
    expect(xml).toContain('<psc:MatchValue Name="urn:oid:1.2.752.29.4.13"/>');
    expect(xml).toContain(idpKeys.certPem.split('\n')[1]);
  });
});

describe('an approved login', () => {
  let outcome: Outcome;
  beforeAll(async () => {
    outcome = await login('approve');
  });

  it('shows the SignMessage and only the citizen the PrincipalSelection names', () => {
    expect(outcome.loginPage).toContain('I hereby confirm that I want to join example.com as a customer');
    expect(outcome.loginPage).toMatch(/<select id="citizen" name="citizen"><option value="197306152385">/);
    expect(outcome.loginPage.match(/<option /g)).toHaveLength(1);
    expect(outcome.loginPage).toContain('id="approve"');
    expect(outcome.loginPage).toContain('id="cancel"');
  });

  it('posts back to the ACS with the RelayState', () => {
    expect(outcome.autoPost).toContain(`action="${ACS}"`);
    expect(field(outcome.autoPost, 'RelayState')).toBe('relay-1');
    expect(outcome.autoPost).toContain('<noscript>');
  });

  it('is accepted by node-saml with the citizen, the LoA and the spec digest', async () => {
    const { profile } = await validate(outcome);
    expect(profile).not.toBeNull();
    expect(profile![ATTRIBUTES.personalIdentityNumber]).toBe(ASA.personalIdentityNumber);
    expect(profile![ATTRIBUTES.givenName]).toBe(ASA.givenName);
    expect(profile![ATTRIBUTES.sn]).toBe(ASA.familyName);
    expect(profile![ATTRIBUTES.displayName]).toBe(ASA.name);
    expect(profile![ATTRIBUTES.dateOfBirth]).toBe('1973-06-15');
    expect(profile![ATTRIBUTES.signMessageDigest]).toBe(SPEC_DIGEST);
    expect(profile!.nameIDFormat).toBe('urn:oasis:names:tc:SAML:2.0:nameid-format:transient');
    expect(outcome.xml).toContain(`<saml:AuthnContextClassRef>${LOA.loa3}</saml:AuthnContextClassRef>`);
    expect(outcome.xml).toContain(`<saml:Audience>${SP_ENTITY_ID}</saml:Audience>`);
    expect(outcome.xml).toContain(`Recipient="${ACS}"`);
  });

  it('has an assertion signature and a Response signature that xmlsec1 verifies', () => {
    expect(xmlsecVerifies(assertionOf(outcome.xml), ASSERTION_ID_ATTR, idpKeys.certPem)).toBe(true);
    expect(xmlsecVerifies(outcome.xml, RESPONSE_ID_ATTR, idpKeys.certPem)).toBe(true);
    expect(xmlsecVerifies(assertionOf(outcome.xml), ASSERTION_ID_ATTR, spKeys.certPem)).toBe(false);
  });

  it('carries a SAD with the claims of 13 §3.2.1, signed with the IdP key', async () => {
    const { profile } = await validate(await login('approve'));
    const sad = profile![ATTRIBUTES.sad] as string;
    const { payload, protectedHeader } = await jwtVerify(sad, await importX509(idpKeys.certPem, 'RS256'), {
      issuer: idp.entityId,
      audience: SP_ENTITY_ID,
      subject: ASA.personalIdentityNumber,
    });
    expect(protectedHeader.alg).toBe('RS256');
    expect(typeof payload.jti).toBe('string');
    expect(payload.exp! - payload.iat!).toBe(300);
    expect(payload.seElnSadext).toEqual({
      ver: '1.0',
      irt: SAD_ID,
      attr: ATTRIBUTES.personalIdentityNumber,
      loa: LOA.loa3,
      reqid: SIGN_REQUEST_ID,
      docs: 3,
    });
  });
});

describe('a cancelled login', () => {
  it('answers Responder with the second-level cancel code, signed', async () => {
    const outcome = await login('cancel');
    expect(outcome.xml).toContain(
      `<samlp:StatusCode Value="${STATUS.responder}"><samlp:StatusCode Value="${STATUS.cancel}"/></samlp:StatusCode>`,
    );
    expect(outcome.xml).not.toContain('<saml:Assertion');
    expect(xmlsecVerifies(outcome.xml, RESPONSE_ID_ATTR, idpKeys.certPem)).toBe(true);
    await expect(validate(outcome)).rejects.toThrow(/Responder/);
  });
});

describe('a login as another citizen than the PrincipalSelection names', () => {
  it('gets UnknownPrincipal, not an assertion', async () => {
    const outcome = await login('approve', { citizen: TEST_CITIZENS[1].personalIdentityNumber });
    expect(outcome.xml).toContain(`<samlp:StatusCode Value="${STATUS.unknownPrincipal}"/>`);
    expect(outcome.xml).not.toContain('<saml:Assertion');
  });
});

describe('a citizen whose eID is below the requested level', () => {
  it('gets NoAuthnContext, not an assertion of a level the eID does not reach', async () => {
    const nils = TEST_CITIZENS[LOA2_CITIZEN_INDEX];
    const outcome = await login('approve', {
      citizen: nils.personalIdentityNumber,
      sp: { samlAuthnRequestExtensions: { '#raw': signMessageXml(MESSAGE_B64) } },
    });
    expect(outcome.xml).toContain(`<samlp:StatusCode Value="${STATUS.noAuthnContext}"/>`);
    expect(outcome.xml).not.toContain('<saml:Assertion');
  });
});

describe('refusals', () => {
  const refusal = async (sp: SAML): Promise<{ status: number; text: string }> => {
    const answer = await sendRequest(sp);
    return { status: answer.status, text: await answer.text() };
  };

  it('refuses a deflated POST request with a hint', async () => {
    const { status, text } = await refusal(new SAML(spConfig({ skipRequestCompression: false })));
    expect(status).toBe(400);
    expect(text).toContain('does not deflate');
  });

  it('refuses an unsigned AuthnRequest, whatever it carries', async () => {
    const encrypted =
      '<csig:SignMessage xmlns:csig="http://id.elegnamnden.se/csig/1.1/dss-ext/ns"><csig:EncryptedMessage/></csig:SignMessage>';
    const { status, text } = await refusal(
      new SAML(spConfig({ privateKey: undefined, samlAuthnRequestExtensions: { '#raw': encrypted } })),
    );
    expect(status).toBe(403);
    expect(text).toContain('not signed');
  });

  it('refuses an AuthnRequest signed by another key than the metadata names', async () => {
    const { status } = await refusal(new SAML(spConfig({ privateKey: throwawayKeyPair('Intruder').keyPem })));
    expect(status).toBe(403);
  });

  it('refuses an SP it does not trust', async () => {
    const { status, text } = await refusal(new SAML(spConfig({ issuer: 'http://127.0.0.1/unknown-sp' })));
    expect(status).toBe(403);
    expect(text).toContain('does not trust');
  });

  it('refuses a request without ForceAuthn and an ACS the metadata does not list', async () => {
    expect((await refusal(new SAML(spConfig({ forceAuthn: false })))).status).toBe(400);
    const other = await refusal(new SAML(spConfig({ callbackUrl: 'http://127.0.0.1:9/elsewhere' })));
    expect(other.status).toBe(400);
    expect(other.text).toContain('AssertionConsumerServiceURL');
  });

  it('refuses an encrypted SignMessage and escapes a plain one', async () => {
    const encrypted =
      '<csig:SignMessage xmlns:csig="http://id.elegnamnden.se/csig/1.1/dss-ext/ns"><csig:EncryptedMessage/></csig:SignMessage>';
    const refused = await refusal(new SAML(spConfig({ samlAuthnRequestExtensions: { '#raw': encrypted } })));
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('not supported by this local IdP');
    const markup = Buffer.from('<b>Tom & Jerry</b>').toString('base64');
    const shown = await refusal(
      new SAML(spConfig({ samlAuthnRequestExtensions: { '#raw': signMessageXml(markup) } })),
    );
    expect(shown.text).toContain('&lt;b&gt;Tom &amp; Jerry&lt;/b&gt;');
    expect(shown.text.match(/<option /g)).toHaveLength(TEST_CITIZENS.length);
  });
});

describe('test knobs', () => {
  it('omit-sign-message-digest and wrong-sign-message-digest', async () => {
    const omitted = await validate(await login('approve', { misbehave: 'omit-sign-message-digest' }));
    expect(omitted.profile![ATTRIBUTES.signMessageDigest]).toBeUndefined();
    const wrong = await validate(await login('approve', { misbehave: 'wrong-sign-message-digest' }));
    expect(wrong.profile![ATTRIBUTES.signMessageDigest]).toMatch(
      /^http:\/\/www\.w3\.org\/2001\/04\/xmlenc#sha256;/,
    );
    expect(wrong.profile![ATTRIBUTES.signMessageDigest]).not.toBe(SPEC_DIGEST);
  });

  it('assertion-unknown-key: node-saml and xmlsec1 refuse the assertion', async () => {
    const outcome = await login('approve', { misbehave: 'assertion-unknown-key' });
    expect(xmlsecVerifies(assertionOf(outcome.xml), ASSERTION_ID_ATTR, idpKeys.certPem)).toBe(false);
    expect(xmlsecVerifies(outcome.xml, RESPONSE_ID_ATTR, idpKeys.certPem)).toBe(true);
    await expect(validate(outcome)).rejects.toThrow();
  });

  it('assertion-unsigned: only the Response is signed, which node-saml refuses', async () => {
    const outcome = await login('approve', { misbehave: 'assertion-unsigned' });
    expect(outcome.xml.match(/<ds:Signature /g)).toHaveLength(1);
    expect(xmlsecVerifies(outcome.xml, RESPONSE_ID_ATTR, idpKeys.certPem)).toBe(true);
    await expect(validate(outcome)).rejects.toThrow();
  });

  it('wrong-in-response-to: node-saml refuses it', async () => {
    const outcome = await login('approve', { misbehave: 'wrong-in-response-to' });
    await expect(validate(outcome)).rejects.toThrow(/InResponseTo/);
  });

  it('other-citizen: the assertion names someone else than the PrincipalSelection', async () => {
    const { profile } = await validate(await login('approve', { misbehave: 'other-citizen' }));
    expect(profile![ATTRIBUTES.personalIdentityNumber]).not.toBe(ASA.personalIdentityNumber);
  });

  it('loa-not-requested: an AuthnContextClassRef outside the request', async () => {
    const { xml } = await login('approve', { misbehave: 'loa-not-requested' });
    const loa = /<saml:AuthnContextClassRef>([^<]+)</.exec(xml)![1];
    expect(loa).not.toBe(LOA.loa3);
  });

  it.each([
    ['sad-bad-irt', (p: Record<string, unknown>) => (p.seElnSadext as { irt: string }).irt !== SAD_ID],
    ['sad-bad-docs', (p: Record<string, unknown>) => (p.seElnSadext as { docs: number }).docs !== 3],
    [
      'sad-bad-reqid',
      (p: Record<string, unknown>) => (p.seElnSadext as { reqid: string }).reqid !== SIGN_REQUEST_ID,
    ],
    ['sad-bad-aud', (p: Record<string, unknown>) => p.aud !== SP_ENTITY_ID],
    ['sad-expired', (p: Record<string, unknown>) => (p.exp as number) < Date.now() / 1000],
  ] as const)('%s: one wrong SAD claim', async (knob, isWrong) => {
    const { profile } = await validate(await login('approve', { misbehave: knob }));
    const payload = decodeJwt(profile![ATTRIBUTES.sad] as string);
    expect(isWrong(payload)).toBe(true);
    expect(payload.sub).toBe(ASA.personalIdentityNumber);
  });

  it('POST /saml/idp/test/next sets the next misbehaviour and refuses an unknown one', async () => {
    const bad = await fetch(`${idp.url}/saml/idp/test/next`, {
      method: 'POST',
      body: '{"misbehave":"nope"}',
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toBe('unknown_misbehaviour');
    const ok = await fetch(`${idp.url}/saml/idp/test/next`, {
      method: 'POST',
      body: JSON.stringify({ misbehave: 'omit-sign-message-digest' }),
    });
    expect(ok.status).toBe(204);
  });
});
