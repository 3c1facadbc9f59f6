/**
 * SAML evidence as another implementation signs it: assertions and federation metadata signed by xmlsec1,
 * the SAD by jose; verified by the adapter, with the forgeries an attacker at the door would try.
 */
import { createPrivateKey, type X509Certificate } from 'node:crypto';
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
import {
  federationMetadataXml,
  makeTestKey,
  samlAssertionXml,
  testKeyDirectory,
  xmlsec1SignById,
} from '../../../test-support/saml-evidence';

const keys = testKeyDirectory();
const dir = keys.dir;
afterAll(() => keys.remove());

const idpKey = makeTestKey(dir, 'idp');
const operator = makeTestKey(dir, 'operator');
const attacker = makeTestKey(dir, 'attacker');
const IDP = 'https://idp.example/saml';
const NOW = new Date();
const PNR = 'urn:oid:1.2.752.29.4.13';

function assertionXml(
  options: { issuer?: string; pnr?: string; extra?: Record<string, string> } = {},
): string {
  return samlAssertionXml({
    issuer: options.issuer ?? IDP,
    inResponseTo: '_req',
    recipient: 'https://sign.example/acs',
    audience: 'https://sign.example/sp',
    now: NOW.getTime(),
    attributes: { [PNR]: options.pnr ?? '195207092072', ...options.extra },
  });
}
const signAssertion = (xml: string, key = idpKey): string =>
  xmlsec1SignById(dir, xml, '_a1', 'Assertion', key);
const metadataXml = (): string =>
  federationMetadataXml({
    entityId: IDP,
    certificate: idpKey.certificate,
    ssoUrl: 'https://idp.example/sso',
  });
const signMetadata = (xml: string, key = operator): string =>
  xmlsec1SignById(dir, xml, '_fed', 'EntitiesDescriptor', key);
const b64 = (c: X509Certificate): string => c.raw.toString('base64');

const FEDERATION = readFederationMetadata(signMetadata(metadataXml()), [operator.certificate]);

describe('readFederationMetadata', () => {
  it('reads the identity providers of metadata the operator signed', () => {
    const idp = FEDERATION.get(IDP) as IdentityProviderEntry;
    expect(idp.ssoPostUrl).toBe('https://idp.example/sso');
    expect(idp.signingCertificates[0]?.fingerprint256).toBe(idpKey.certificate.fingerprint256);
    expect(idp.assuranceCertifications).toEqual(['http://id.elegnamnden.se/loa/1.0/loa3']);
    expect(idp.entityCategories).toEqual(['http://id.elegnamnden.se/sprop/1.0/scal2']);
    expect(idp.principalSelection).toEqual(['urn:oid:1.2.752.29.4.13']);
  });

  it('refuses metadata signed by another key, altered, or unsigned', () => {
    const byAttacker = signMetadata(metadataXml(), attacker);
    expect(() => readFederationMetadata(byAttacker, [operator.certificate])).toThrow(MetadataUntrustedError);
    const signed = signMetadata(metadataXml());
    const swapped = signed.replace(b64(idpKey.certificate), b64(attacker.certificate));
    expect(() => readFederationMetadata(swapped, [operator.certificate])).toThrow(MetadataUntrustedError);
    expect(() =>
      readFederationMetadata(metadataXml().replace('<!--SIG-->', ''), [operator.certificate]),
    ).toThrow(MetadataUntrustedError);
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
    const facts = verifySamlAssertion(signAssertion(assertionXml()), FEDERATION);
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
      () => signAssertion(assertionXml(), attacker),
      'ASSERTION_SIGNATURE_INVALID',
    ],
    [
      'altered after signing (another person)',
      () => signAssertion(assertionXml()).replace('195207092072', '194911172296'),
      'ASSERTION_SIGNATURE_INVALID',
    ],
    ['unsigned', () => assertionXml().replace('<!--SIG-->', ''), 'ASSERTION_SIGNATURE_INVALID'],
    [
      'from an identity provider outside the federation',
      () => signAssertion(assertionXml({ issuer: 'https://rogue.example' })),
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
    key = idpKey.keyPem,
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
      .sign(createPrivateKey(key));
  }
  async function factsWith(jwt: string) {
    return verifySamlAssertion(signAssertion(assertionXml({ extra: { [SAD_ATTRIBUTE]: jwt } })), FEDERATION);
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
    expect(await outcome(await sad({}, {}, attacker.keyPem))).toContain('does not verify');
  });
});
