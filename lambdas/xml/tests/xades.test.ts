/**
 * XAdES sign tasks updated for the certificate: a test e-service (from XMLDSig and XAdES, not from
 * xades.ts) builds its SignedInfo over a document, the service updates it, the e-service assembles the
 * enveloped ds:Signature with the returned octets and object, and xmlsec1 verifies both references; the
 * refusals of the profile.
 */
import { createHash, createPrivateKey, sign } from 'node:crypto';
import { BadXadesTaskError, NS, updateXadesTask, type XadesTaskInput } from '@pipeline/xml';
import { makeTestKey, testKeyDirectory, xmlsec1Verifies } from '../../test-support/saml-evidence';

const keys = testKeyDirectory();
afterAll(() => keys.remove());
const leafKeyFiles = makeTestKey(keys.dir, 'leaf');
const leaf = leafKeyFiles.certificate;
const leafKey = createPrivateKey(leafKeyFiles.keyPem);
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';

// The e-service's document, already in canonical form (no declaration, no white space between elements).
const DOCUMENT = '<lease xmlns="urn:example:lease"><flat>12</flat><tenant>Tove Tester</tenant></lease>';
const documentDigest = createHash('sha256').update(DOCUMENT).digest('base64');
/** SignedInfo in exclusive canonical form: a reference to the whole document, and a SignedProperties stub. */
function signedInfo(withPropertiesReference: boolean, method = RSA_SHA256): Buffer {
  return Buffer.from(
    `<ds:SignedInfo xmlns:ds="${NS.ds}"><ds:CanonicalizationMethod Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"></ds:CanonicalizationMethod>` +
      `<ds:SignatureMethod Algorithm="${method}"></ds:SignatureMethod>` +
      '<ds:Reference URI=""><ds:Transforms><ds:Transform Algorithm="http://www.w3.org/2000/09/xmldsig#enveloped-signature"></ds:Transform>' +
      '<ds:Transform Algorithm="http://www.w3.org/2001/10/xml-exc-c14n#"></ds:Transform></ds:Transforms>' +
      `<ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"></ds:DigestMethod><ds:DigestValue>${documentDigest}</ds:DigestValue></ds:Reference>` +
      (withPropertiesReference
        ? '<ds:Reference Type="http://uri.etsi.org/01903#SignedProperties" URI="#props"><ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"></ds:DigestMethod><ds:DigestValue>AAAA</ds:DigestValue></ds:Reference>'
        : '') +
      '</ds:SignedInfo>',
  );
}

const BASE: XadesTaskInput = {
  signedInfo: signedInfo(true),
  adesType: 'BES',
  signatureMethod: RSA_SHA256,
  signatureId: 'sig-1',
  certificateDer: leaf.raw,
  signingTime: new Date('2026-11-29T10:00:00Z'),
};

/** The e-service's signed document: its SignedInfo replaced by the service's, the object appended. */
function assemble(updatedSignedInfo: Buffer, object: Buffer): string {
  const value = sign('sha256', updatedSignedInfo, leafKey).toString('base64');
  const signature =
    `<ds:Signature xmlns:ds="${NS.ds}" Id="sig-1">${updatedSignedInfo.toString('utf8')}<ds:SignatureValue>${value}</ds:SignatureValue>` +
    `<ds:KeyInfo><ds:X509Data><ds:X509Certificate>${leaf.raw.toString('base64')}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>` +
    `${object.toString('utf8')}</ds:Signature>`;
  return DOCUMENT.replace('</lease>', `${signature}</lease>`);
}

const xadesVerifies = (xml: string): boolean =>
  xmlsec1Verifies(keys.dir, xml, leafKeyFiles.certFile, `Id:${NS.xades}:SignedProperties`);

describe('updateXadesTask', () => {
  it.each([
    ['with a SignedProperties reference to replace', true],
    ['adding the SignedProperties reference', false],
  ])('BES %s: xmlsec1 verifies the assembled XAdES, and refuses it tampered', (_, withReference) => {
    const out = updateXadesTask({ ...BASE, signedInfo: signedInfo(withReference) });
    const object = out.adesObject!.toString('utf8');
    expect(object).toContain('Target="#sig-1"');
    expect(object).toMatch(
      /<xades:SigningTime>2026-11-29T10:00:00Z<\/xades:SigningTime><xades:SigningCertificateV2>/,
    );
    expect(object).toContain(createHash('sha256').update(leaf.raw).digest('base64'));
    const xml = assemble(out.signedInfo, out.adesObject!);
    expect(xadesVerifies(xml)).toBe(true);
    expect(xadesVerifies(xml.replace('2026-11-29T10:00:00Z', '2020-01-01T00:00:00Z'))).toBe(false);
    expect(xadesVerifies(xml.replace('<flat>12</flat>', '<flat>13</flat>'))).toBe(false);
  });

  it("EPES keeps the e-service's policy after SigningCertificateV2 and replaces a v1 reference", () => {
    const object = Buffer.from(
      `<ds:Object xmlns:ds="${NS.ds}"><xades:QualifyingProperties xmlns:xades="${NS.xades}"><xades:SignedProperties Id="props"><xades:SignedSignatureProperties>` +
        '<xades:SigningCertificate><xades:Cert/></xades:SigningCertificate>' +
        '<xades:SignaturePolicyIdentifier><xades:SignaturePolicyImplied/></xades:SignaturePolicyIdentifier>' +
        '</xades:SignedSignatureProperties></xades:SignedProperties></xades:QualifyingProperties></ds:Object>',
    );
    const out = updateXadesTask({ ...BASE, adesType: 'EPES', adesObject: object });
    const text = out.adesObject!.toString('utf8');
    expect(text).not.toContain('<xades:SigningCertificate>');
    expect(text).toMatch(/<\/xades:SigningCertificateV2><xades:SignaturePolicyIdentifier>/);
    expect(text).toContain('Id="props"');
    expect(xadesVerifies(assemble(out.signedInfo, out.adesObject!))).toBe(true);
  });

  it('None returns the bytes unchanged', () => {
    expect(updateXadesTask({ ...BASE, adesType: 'None' }).signedInfo).toEqual(BASE.signedInfo);
  });

  it.each([
    ['not a SignedInfo', { signedInfo: Buffer.from(`<ds:Object xmlns:ds="${NS.ds}"/>`) }],
    [
      'another signature method than requested',
      { signatureMethod: 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256' },
    ],
    ['no signature Id', { signatureId: undefined }],
    ['EPES without a policy', { adesType: 'EPES' as const }],
    ['an object that is not a ds:Object', { adesObject: Buffer.from('<x/>') }],
  ])('refuses %s', (_, change) => {
    expect(() => updateXadesTask({ ...BASE, ...change })).toThrow(BadXadesTaskError);
  });
});
