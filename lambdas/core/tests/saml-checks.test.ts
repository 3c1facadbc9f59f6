/** The framework's rules on a verified SAML assertion, each refusal with its registry code. */
import {
  AssertionError,
  checkSamlAssertion,
  checkSamlValidity,
  checkSignerAttributes,
  checkSignMessageDigest,
  SIGN_MESSAGE_DIGEST_ATTRIBUTE,
  type SamlAssertionFacts,
  type SamlExpectations,
} from '@pipeline/core/identity';

const NOW = Date.parse('2026-11-29T10:00:00Z');
const PNR = 'urn:oid:1.2.752.29.4.13';
const FACTS: SamlAssertionFacts = {
  id: '_a1',
  issuer: 'https://idp.example',
  issueInstant: NOW - 5_000,
  inResponseTo: '_req',
  recipient: 'https://sign.example/acs',
  confirmationNotOnOrAfter: NOW + 300_000,
  notBefore: NOW - 10_000,
  notOnOrAfter: NOW + 300_000,
  audiences: ['https://sign.example/sp'],
  authnInstant: NOW - 10_000,
  authnContextClassRef: 'http://id.elegnamnden.se/loa/1.0/loa3',
  attributes: [{ name: PNR, values: ['195207092072'] }],
};
const EXPECTED: SamlExpectations = {
  issuer: 'https://idp.example',
  inResponseTo: '_req',
  audience: 'https://sign.example/sp',
  recipient: 'https://sign.example/acs',
  acceptedLoa: ['http://id.elegnamnden.se/loa/1.0/loa3'],
  requestedAt: NOW - 60_000,
  now: NOW,
  clockSkewMs: 30_000,
  maxAgeMs: 600_000,
};

function codeOf(fn: () => void): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof AssertionError) return err.code;
    throw err;
  }
  return 'accepted';
}

describe('checkSamlAssertion', () => {
  it('accepts an assertion answering this request', () => {
    expect(codeOf(() => checkSamlAssertion(FACTS, EXPECTED))).toBe('accepted');
  });

  it.each<[string, Partial<SamlAssertionFacts>, string]>([
    ['another identity provider', { issuer: 'https://other.example' }, 'ASSERTION_ISSUER_UNTRUSTED'],
    ['another AuthnRequest (InResponseTo)', { inResponseTo: '_other' }, 'ASSERTION_BINDING_MISMATCH'],
    ['no InResponseTo (unsolicited)', { inResponseTo: undefined }, 'ASSERTION_BINDING_MISMATCH'],
    ['another recipient', { recipient: 'https://attacker.example/acs' }, 'ASSERTION_AUDIENCE_MISMATCH'],
    ['another audience', { audiences: ['https://other.example/sp'] }, 'ASSERTION_AUDIENCE_MISMATCH'],
    ['not valid yet', { notBefore: NOW + 60_000 }, 'ASSERTION_NOT_YET_VALID'],
    [
      'a login before the request (no ForceAuthn)',
      { authnInstant: NOW - 120_000 },
      'ASSERTION_LOGIN_NOT_FRESH',
    ],
    [
      'a level of assurance not asked for',
      { authnContextClassRef: 'http://id.elegnamnden.se/loa/1.0/loa2' },
      'ASSERTION_LOA_INSUFFICIENT',
    ],
  ])('refuses %s', (_, change, code) => {
    expect(codeOf(() => checkSamlAssertion({ ...FACTS, ...change }, EXPECTED))).toBe(code);
  });

  it('refuses a login older than a request may wait (the CA)', () => {
    expect(
      codeOf(() => checkSamlAssertion(FACTS, { ...EXPECTED, now: NOW + 700_000, requestedAt: NOW - 60_000 })),
    ).toBe('ASSERTION_STALE');
  });

  it('refuses an expired assertion where it is consumed', () => {
    expect(codeOf(() => checkSamlValidity(FACTS, NOW, 30_000))).toBe('accepted');
    expect(codeOf(() => checkSamlValidity(FACTS, NOW + 400_000, 30_000))).toBe('ASSERTION_EXPIRED');
    expect(
      codeOf(() => checkSamlValidity({ ...FACTS, confirmationNotOnOrAfter: undefined }, NOW, 30_000)),
    ).toBe('ASSERTION_EXPIRED');
  });
});

describe('checkSignerAttributes', () => {
  it('accepts the named person and refuses another', () => {
    expect(codeOf(() => checkSignerAttributes([{ name: PNR, values: ['195207092072'] }], FACTS))).toBe(
      'accepted',
    );
    expect(codeOf(() => checkSignerAttributes([{ name: PNR, values: ['194911172296'] }], FACTS))).toBe(
      'SIGNER_MISMATCH',
    );
    expect(codeOf(() => checkSignerAttributes([{ name: 'urn:oid:2.5.4.42', values: ['Tove'] }], FACTS))).toBe(
      'SIGNER_MISMATCH',
    );
  });
});

describe('checkSignMessageDigest', () => {
  // ELN-0604 §3.2.4's worked example.
  const MESSAGE = Buffer.from('I hereby confirm that I want to join example.com as a customer', 'utf8');
  const SPEC_VALUE = 'http://www.w3.org/2001/04/xmlenc#sha256;0yKaSVsYeh+PX2Q6diqO2w89+a3Dm303tp3AVjgxwj0=';
  const withDigest = (value: string): SamlAssertionFacts => ({
    ...FACTS,
    attributes: [...FACTS.attributes, { name: SIGN_MESSAGE_DIGEST_ATTRIBUTE, values: [value] }],
  });

  it("accepts the specification's example", () => {
    expect(
      codeOf(() => checkSignMessageDigest(withDigest(SPEC_VALUE), { mustShow: true, message: MESSAGE })),
    ).toBe('accepted');
  });

  it.each<[string, SamlAssertionFacts, boolean, string]>([
    ['a missing attestation with MustShow', FACTS, true, 'ASSERTION_APPROVAL_MISSING'],
    [
      'a digest of another message',
      withDigest(SPEC_VALUE.replace('0yKa', '1yKa')),
      false,
      'ASSERTION_APPROVAL_MISMATCH',
    ],
    [
      'an unknown digest algorithm',
      withDigest(SPEC_VALUE.replace('xmlenc#sha256', 'xmldsig#sha1')),
      true,
      'ASSERTION_APPROVAL_INVALID',
    ],
    ['a value without a separator', withDigest('0yKaSVsYeh'), true, 'ASSERTION_APPROVAL_INVALID'],
  ])('refuses %s', (_, facts, mustShow, code) => {
    expect(codeOf(() => checkSignMessageDigest(facts, { mustShow, message: MESSAGE }))).toBe(code);
  });

  it('accepts no attestation when the message need not be shown, and any with an encrypted message', () => {
    expect(codeOf(() => checkSignMessageDigest(FACTS, { mustShow: false, message: MESSAGE }))).toBe(
      'accepted',
    );
    expect(
      codeOf(() =>
        checkSignMessageDigest(withDigest(SPEC_VALUE.replace('0yKa', '1yKa')), { mustShow: true }),
      ),
    ).toBe('accepted');
    expect(codeOf(() => checkSignMessageDigest(FACTS, { mustShow: true }))).toBe(
      'ASSERTION_APPROVAL_MISSING',
    );
  });
});
