/** SignResponses as the schemas define them (xmllint) and signed as an e-service checks them (xmlsec1). */
import { createPrivateKey, sign as cryptoSign, X509Certificate } from 'node:crypto';
import { buildSignResponse, DSS_STATUS, signSignResponse, type SignResponseInput } from '@pipeline/dss';
import type { XmlSigner } from '@pipeline/xml';
import { responseSignatureVerifies } from '../../../scripts/local/dss-eservice/sign-request';
import { validateXsd } from '../../../scripts/local/verify/xsd';
import { makeTestKey, testKeyDirectory } from '../../test-support/saml-evidence';

const keys = testKeyDirectory();
afterAll(() => keys.remove());
const service = makeTestKey(keys.dir, 'signservice');
const certPem = service.certPem;
const key = createPrivateKey(service.keyPem);
const signer: XmlSigner = {
  signatureMethod: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  certificates: [new X509Certificate(certPem).raw],
  sign: async (octets) => cryptoSign('sha256', octets, key),
};

const SUCCESS: SignResponseInput = {
  requestId: 'c'.repeat(32),
  version: '1.5',
  responseTime: new Date('2026-11-29T10:00:00.123Z'),
  status: 'SUCCESS',
  signerAssertionInfo: {
    identityProvider: 'https://idp.example/idp',
    authenticationInstant: new Date('2026-11-29T09:59:30Z'),
    authnContextClassRef: 'http://id.elegnamnden.se/loa/1.0/loa3',
    serviceId: 'https://sign.example/signservice',
    assertionRef: '_assertion-1',
    attributes: [{ name: 'urn:oid:1.2.752.29.4.13', values: ['195207092072'] }],
    assertion: Buffer.from('<saml:Assertion/>'),
  },
  certificateChain: [Buffer.from('leaf'), Buffer.from('root')],
  tasks: [
    {
      signTaskId: 'xml',
      sigType: 'XML',
      adesType: 'BES',
      toBeSignedBytes: Buffer.from('<ds:SignedInfo/>'),
      adesObject: { signatureId: 'sig-1', bytes: Buffer.from('<ds:Object/>') },
      signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
      signature: Buffer.from('signature'),
    },
    {
      signTaskId: 'cms',
      sigType: 'CMS',
      adesType: 'None',
      toBeSignedBytes: Buffer.from([0x31, 0]),
      signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
      signature: Buffer.from('signature'),
    },
  ],
};

describe('SignResponse', () => {
  it('of a success validates against the schemas and verifies with xmlsec1, signature last in OptionalOutputs', async () => {
    const xml = await signSignResponse(buildSignResponse(SUCCESS), signer);
    expect(validateXsd(xml)).toEqual({ valid: true, errors: '' });
    expect(responseSignatureVerifies(xml, certPem)).toBe(true);
    expect(responseSignatureVerifies(xml.replace('195207092072', '194911172296'), certPem)).toBe(false);
    expect(xml).toMatch(
      /<\/csig:SignResponseExtension><ds:Signature [^]*<\/ds:Signature><\/dss:OptionalOutputs>/,
    );
    expect(xml).toContain('<csig:ResponseTime>2026-11-29T10:00:00Z</csig:ResponseTime>');
    expect(xml).toContain('<csig:AssertionRef>_assertion-1</csig:AssertionRef>');
    expect(xml).not.toContain('<csig:Request>');
  });

  it.each(Object.keys(DSS_STATUS).filter((s) => s !== 'SUCCESS'))(
    'of a refusal (%s) carries its codes and validates',
    async (status) => {
      const xml = await signSignResponse(
        buildSignResponse({
          requestId: 'd'.repeat(32),
          version: '1.1',
          responseTime: new Date(),
          status: status as SignResponseInput['status'],
          message: 'the RequestTime is outside the accepted window',
          encodedRequest: Buffer.from('<request/>').toString('base64'),
        }),
        signer,
      );
      const expected = DSS_STATUS[status as keyof typeof DSS_STATUS];
      expect(xml).toContain(`<dss:ResultMajor>${expected.major}</dss:ResultMajor>`);
      if ('minor' in expected) expect(xml).toContain(`<dss:ResultMinor>${expected.minor}</dss:ResultMinor>`);
      // Version 1.1 echoes the request (ELN-0609 1.1).
      expect(xml).toContain('<csig:Request>');
      expect(validateXsd(xml)).toEqual({ valid: true, errors: '' });
      expect(responseSignatureVerifies(xml, certPem)).toBe(true);
    },
  );
});
