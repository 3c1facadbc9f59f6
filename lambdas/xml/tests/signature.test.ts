/**
 * Enveloped XML signatures judged by xmlsec1 (a verifier nobody here wrote) in both directions, and the
 * attacks a verifier of sign requests and assertions must refuse.
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey, sign as cryptoSign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  NS,
  XmlAlgorithmNotSupportedError,
  XmlMalformedError,
  XmlSignatureInvalidError,
  childrenNS,
  parseXml,
  signXml,
  verifyXml,
  type XmlSigner,
} from '@pipeline/xml';
import {
  makeTestKey,
  testKeyDirectory,
  xmlsec1Verifies,
  type TestKey,
} from '../../test-support/saml-evidence';

const keys = testKeyDirectory();
const dir = keys.dir;
afterAll(() => keys.remove());

const rsa = makeTestKey(dir, 'requester');
const ec = makeTestKey(dir, 'requester-ec', 'ec');
const attacker = makeTestKey(dir, 'attacker');

function signerOf(key: TestKey, method: string): XmlSigner {
  const ecdsa = method.includes('ecdsa');
  return {
    signatureMethod: method,
    certificates: [key.certificate.raw],
    sign: async (octets) =>
      cryptoSign(
        'sha256',
        octets,
        ecdsa
          ? { key: createPrivateKey(key.keyPem), dsaEncoding: 'ieee-p1363' }
          : createPrivateKey(key.keyPem),
      ),
  };
}

const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const ECDSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256';
const REQUEST =
  '<dss:SignRequest xmlns:dss="urn:oasis:names:tc:dss:1.0:core:schema" RequestID="r1"><dss:OptionalInputs>' +
  '<Data xmlns="urn:example">to be signed</Data></dss:OptionalInputs></dss:SignRequest>';
const inOptionalInputs = (d: Document): Element | undefined => {
  const optional = d.documentElement.getElementsByTagNameNS(
    'urn:oasis:names:tc:dss:1.0:core:schema',
    'OptionalInputs',
  )[0];
  const last = optional?.lastChild as Element | null | undefined;
  return last?.namespaceURI === NS.ds && last.localName === 'Signature' ? last : undefined;
};
const location = { xpath: "/*/*[local-name()='OptionalInputs']", action: 'append' as const };

const xmlsec1Verify = (xml: string, key: TestKey, idAttribute?: string): boolean =>
  xmlsec1Verifies(dir, xml, key.certFile, idAttribute);

describe('signXml', () => {
  it.each([
    ['RSA', rsa, RSA_SHA256],
    ['ECDSA (r‖s)', ec, ECDSA_SHA256],
  ])('signs enveloped with %s, and xmlsec1 verifies it', async (_, key, method) => {
    const signed = await signXml(REQUEST, signerOf(key, method), { referenceId: '', location });
    expect(xmlsec1Verify(signed, key)).toBe(true);
    expect(xmlsec1Verify(signed.replace('to be signed', 'to be forged'), key)).toBe(false);
    const verified = verifyXml(signed, {
      trusted: [key.certificate],
      signature: inOptionalInputs,
      referenceId: '',
    });
    expect(verified.signedXml).toContain('to be signed');
    expect(verified.signedXml).not.toContain('Signature');
  });

  it('signs an element by its ID, and xmlsec1 verifies it', async () => {
    const xml = '<Root><Assertion xmlns="urn:x" ID="_a1"><Name>Tove</Name></Assertion></Root>';
    const signed = await signXml(xml, signerOf(rsa, RSA_SHA256), {
      referenceId: '_a1',
      location: { xpath: "//*[@ID='_a1']", action: 'append' },
    });
    expect(xmlsec1Verify(signed, rsa, 'ID:Assertion')).toBe(true);
  });
});

describe('verifyXml', () => {
  /** A document signed by xmlsec1 from a template: our verifier reads what another implementation wrote. */
  function xmlsec1Signed(key: TestKey, method: string, body = REQUEST): string {
    const template = body.replace(
      '</dss:OptionalInputs>',
      `<ds:Signature xmlns:ds="${NS.ds}"><ds:SignedInfo>` +
        '<ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/>' +
        `<ds:SignatureMethod Algorithm="${method}"/><ds:Reference URI=""><ds:Transforms>` +
        '<ds:Transform Algorithm="http://www.w3.org/2000/09/xmldsig#enveloped-signature"/>' +
        '<ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/></ds:Transforms>' +
        '<ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/><ds:DigestValue/></ds:Reference>' +
        '</ds:SignedInfo><ds:SignatureValue/><ds:KeyInfo><ds:X509Data/></ds:KeyInfo></ds:Signature></dss:OptionalInputs>',
    );
    const file = join(dir, 'template.xml');
    writeFileSync(file, template);
    return execFileSync('xmlsec1', ['--sign', '--privkey-pem', `${key.keyFile},${key.certFile}`, file], {
      encoding: 'utf8',
    });
  }

  it.each([
    ['RSA', rsa, RSA_SHA256],
    ['ECDSA', ec, ECDSA_SHA256],
  ])('verifies what xmlsec1 signed with %s', (_, key, method) => {
    const signed = xmlsec1Signed(key, method);
    const verified = verifyXml(signed, {
      trusted: [attacker.certificate, key.certificate],
      signature: inOptionalInputs,
      referenceId: '',
    });
    expect(verified.certificate.fingerprint256).toBe(key.certificate.fingerprint256);
  });

  it('ignores KeyInfo: a document signed by another key carrying its own certificate is refused', () => {
    const signed = xmlsec1Signed(attacker, RSA_SHA256);
    expect(signed).toContain('X509Certificate');
    expect(() =>
      verifyXml(signed, { trusted: [rsa.certificate], signature: inOptionalInputs, referenceId: '' }),
    ).toThrow(XmlSignatureInvalidError);
  });

  it('refuses content changed after signing', async () => {
    const signed = await signXml(REQUEST, signerOf(rsa, RSA_SHA256), { referenceId: '', location });
    expect(() =>
      verifyXml(signed.replace('to be signed', 'to be forged'), {
        trusted: [rsa.certificate],
        signature: inOptionalInputs,
        referenceId: '',
      }),
    ).toThrow(XmlSignatureInvalidError);
  });

  it('refuses a signature elsewhere than the protocol puts it, and a second signature', async () => {
    const signed = await signXml(REQUEST, signerOf(rsa, RSA_SHA256), { referenceId: '', location });
    const moved = signed.replace(/(<ds:Signature[\s\S]*<\/ds:Signature>)(<\/dss:OptionalInputs>)/, '$2$1');
    expect(() =>
      verifyXml(moved, { trusted: [rsa.certificate], signature: inOptionalInputs, referenceId: '' }),
    ).toThrow('the signature is missing or misplaced');
    const signature = /<ds:Signature[\s\S]*<\/ds:Signature>/.exec(signed)?.[0] ?? '';
    const twice = signed.replace('<Data', `${signature}<Data`);
    expect(() =>
      verifyXml(twice, { trusted: [rsa.certificate], signature: inOptionalInputs, referenceId: '' }),
    ).toThrow('exactly one signature is allowed');
  });

  it('refuses a reference to another element than the protocol expects (wrapping)', async () => {
    const xml = REQUEST.replace('<Data ', '<Data ID="_d" ');
    const signed = await signXml(xml, signerOf(rsa, RSA_SHA256), { referenceId: '_d', location });
    expect(() =>
      verifyXml(signed, { trusted: [rsa.certificate], signature: inOptionalInputs, referenceId: '' }),
    ).toThrow('the signature must reference exactly the signed element');
  });

  it('refuses SHA-1 and XPath transforms', () => {
    const sha1 = xmlsec1Signed(rsa, RSA_SHA256).replace(/xmlenc#sha256/, 'xmldsig#sha1');
    expect(() =>
      verifyXml(sha1, { trusted: [rsa.certificate], signature: inOptionalInputs, referenceId: '' }),
    ).toThrow(XmlAlgorithmNotSupportedError);
    const xpath = xmlsec1Signed(rsa, RSA_SHA256).replace(
      '<ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"/>',
      '<ds:Transform Algorithm="http://www.w3.org/TR/1999/REC-xpath-19991116"><ds:XPath>1</ds:XPath></ds:Transform>',
    );
    expect(() =>
      verifyXml(xpath, { trusted: [rsa.certificate], signature: inOptionalInputs, referenceId: '' }),
    ).toThrow(XmlAlgorithmNotSupportedError);
  });

  it('refuses a DOCTYPE before looking at the signature', () => {
    const bomb = `<!DOCTYPE r [<!ENTITY a "aaaa">]>${REQUEST}`;
    expect(() =>
      verifyXml(bomb, { trusted: [rsa.certificate], signature: inOptionalInputs, referenceId: '' }),
    ).toThrow(XmlMalformedError);
  });

  it('finds children by namespace, not by prefix', () => {
    const doc = parseXml(`<r xmlns:a="${NS.ds}" xmlns:b="urn:other"><a:Signature/><b:Signature/></r>`);
    expect(childrenNS(doc.documentElement, NS.ds, 'Signature')).toHaveLength(1);
  });
});
