/**
 * Reading SignRequests that a spec-written e-service made and xmlsec1 signed: what is trusted at all (no
 * response for those), and the framework's refusals for the rest.
 */
import {
  DssUntrustedRequestError,
  readSignRequest,
  type DssClientRegistration,
  type DssServiceContext,
  type ReadResult,
} from '@pipeline/dss';
import {
  signRequest,
  signRequestTemplate,
  type EServiceRequest,
} from '../../../scripts/local/dss-eservice/sign-request';
import { validateXsd } from '../../../scripts/local/verify/xsd';
import { makeTestKey, testKeyDirectory } from '../../test-support/saml-evidence';

const keys = testKeyDirectory();
afterAll(() => keys.remove());
const eservice = makeTestKey(keys.dir, 'eservice');
const stranger = makeTestKey(keys.dir, 'stranger');
const NOW = new Date();
const REGISTRATION: DssClientRegistration = {
  entityId: 'https://eservice.example/sp',
  certificates: [eservice.certificate],
  returnUrls: ['https://eservice.example/sign/response'],
  acceptedLoa: ['http://id.elegnamnden.se/loa/1.0/loa3'],
  certTypes: ['PKC'],
  includeAssertion: false,
};
const CONTEXT: DssServiceContext = {
  signServiceEntityId: 'https://sign.example/signservice',
  registrations: [REGISTRATION],
  now: NOW,
  maxRequestAgeMs: 180_000,
  clockSkewMs: 60_000,
  maxTasks: 50,
};
const BASE: EServiceRequest = {
  requestTime: NOW,
  returnUrl: 'https://eservice.example/sign/response',
  signer: [{ name: 'urn:oid:1.2.752.29.4.13', value: '195207092072' }],
  identityProvider: 'https://idp.example/idp',
  signRequester: 'https://eservice.example/sp',
  signService: 'https://sign.example/signservice',
  loa: ['http://id.elegnamnden.se/loa/1.0/loa3'],
  requestedCertAttributes: [
    { ref: '2.5.4.5', samlNames: ['urn:oid:1.2.752.29.4.13'] },
    { ref: '2.5.4.42', samlNames: ['urn:oid:2.5.4.42'] },
  ],
  signMessage: { text: 'I sign the lease.', mustShow: true },
  tasks: [
    {
      id: 'xml',
      sigType: 'XML',
      adesType: 'BES',
      toBeSignedBytes: Buffer.from('<ds:SignedInfo/>'),
      adesObject: { signatureId: 'sig-1' },
    },
    { id: 'pdf', sigType: 'PDF', adesType: 'BES', toBeSignedBytes: Buffer.from([0x31, 0x00]) },
    { id: 'cms', sigType: 'CMS', toBeSignedBytes: Buffer.from([0x31, 0x00]) },
  ],
};

const read = (request: Partial<EServiceRequest> = {}, key = eservice, context = CONTEXT): ReadResult =>
  readSignRequest(signRequest(signRequestTemplate({ ...BASE, ...request }), key), context);

function refusal(result: ReadResult): string {
  if (result.kind !== 'refused') throw new Error('accepted');
  return result.refusal.status;
}

describe('readSignRequest', () => {
  it("writes the e-service's request as the schemas define it (xmllint)", () => {
    const verdict = validateXsd(
      Buffer.from(signRequest(signRequestTemplate(BASE), eservice), 'base64').toString('utf8'),
    );
    expect(verdict.errors).toBe('');
    expect(verdict.valid).toBe(true);
  });

  it('reads a signed request of three tasks from the signed octets', () => {
    const result = read({ requestId: 'a'.repeat(32) });
    expect(result.kind).toBe('accepted');
    if (result.kind !== 'accepted') return;
    const { request, replyTo } = result;
    expect(replyTo).toMatchObject({ requestId: 'a'.repeat(32), version: '1.1', returnUrl: BASE.returnUrl });
    expect(request.tasks.map((t) => [t.signTaskId, t.sigType, t.adesType])).toEqual([
      ['xml', 'XML', 'BES'],
      ['pdf', 'PDF', 'BES'],
      ['cms', 'CMS', 'None'],
    ]);
    expect(request.tasks[0]?.adesObject?.signatureId).toBe('sig-1');
    expect(request.signer).toEqual([{ name: 'urn:oid:1.2.752.29.4.13', values: ['195207092072'] }]);
    expect(request.signMessage?.message?.toString('utf8')).toBe('I sign the lease.');
    expect(request.signMessage?.mustShow).toBe(true);
    expect(request.signMessage?.xml).toContain('SignMessage');
    expect(request.signatureAlgorithm).toBe('http://www.w3.org/2001/04/xmldsig-more#rsa-sha256');
    expect(request.requestedCertAttributes.map((a) => a.certAttributeRef)).toEqual(['2.5.4.5', '2.5.4.42']);
    expect(request.identityProvider).toBe('https://idp.example/idp');
  });

  describe('answers nothing (an error page) when the origin is not established', () => {
    it.each([
      ['an unregistered SignRequester', { signRequester: 'https://other.example/sp' }, eservice],
      ['a key the SignRequester did not register', {}, stranger],
      ['a return URL not registered', { returnUrl: 'https://attacker.example/collect' }, eservice],
    ])('%s', (_, request, key) => {
      expect(() => read(request, key)).toThrow(DssUntrustedRequestError);
    });

    it('a request changed after it was signed', () => {
      const xml = Buffer.from(signRequest(signRequestTemplate(BASE), eservice), 'base64').toString('utf8');
      const message = Buffer.from('I sign the lease.').toString('base64');
      expect(xml).toContain(message);
      const forged = xml.replace(message, Buffer.from('I give away my house.').toString('base64'));
      expect(() => readSignRequest(Buffer.from(forged).toString('base64'), CONTEXT)).toThrow(
        DssUntrustedRequestError,
      );
    });

    it('a body that is not base64 XML', () => {
      expect(() => readSignRequest('%%%', CONTEXT)).toThrow(DssUntrustedRequestError);
      expect(() => readSignRequest(Buffer.from('<a').toString('base64'), CONTEXT)).toThrow(
        DssUntrustedRequestError,
      );
    });
  });

  describe('refuses with the framework status', () => {
    it.each([
      ['an old RequestTime', { requestTime: new Date(NOW.getTime() - 300_000) }, 'REQUEST_EXPIRED'],
      ['a RequestTime in the future', { requestTime: new Date(NOW.getTime() + 120_000) }, 'REQUEST_EXPIRED'],
      ['expired Conditions', { validitySeconds: -70 }, 'REQUEST_EXPIRED'],
      ['an unknown version', { version: '2.0' }, 'NOT_SUPPORTED'],
      ['another SignService', { signService: 'https://other.example/signservice' }, 'REQUESTER_ERROR'],
      [
        'ASiC',
        { tasks: [{ id: 'a', sigType: 'ASiC' as const, toBeSignedBytes: Buffer.from('x') }] },
        'NOT_SUPPORTED',
      ],
      [
        'ProcessingRules',
        {
          tasks: [
            { id: 'a', sigType: 'CMS' as const, toBeSignedBytes: Buffer.from('x'), processingRules: 'urn:x' },
          ],
        },
        'NOT_SUPPORTED',
      ],
      ['SHA-1', { signatureAlgorithm: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1' }, 'NOT_SUPPORTED'],
      ['a CertType not registered', { certType: 'QC/SSCD' }, 'NOT_SUPPORTED'],
      [
        'a level of assurance not accepted',
        { loa: ['http://id.elegnamnden.se/loa/1.0/loa2'] },
        'UNSUPPORTED_LOA',
      ],
      ['a short RequestID', { requestId: 'abc' }, 'REQUESTER_ERROR'],
      [
        'repeated SignTaskIds',
        {
          tasks: [
            { id: 'a', sigType: 'CMS' as const, toBeSignedBytes: Buffer.from('x') },
            { id: 'a', sigType: 'CMS' as const, toBeSignedBytes: Buffer.from('y') },
          ],
        },
        'REQUESTER_ERROR',
      ],
      [
        'XAdES without a SignatureId',
        {
          tasks: [
            { id: 'a', sigType: 'XML' as const, adesType: 'BES' as const, toBeSignedBytes: Buffer.from('x') },
          ],
        },
        'REQUESTER_ERROR',
      ],
    ])('%s', (_, request, status) => {
      expect(refusal(read(request))).toBe(status);
    });

    it('more tasks than the service takes', () => {
      expect(refusal(read({}, eservice, { ...CONTEXT, maxTasks: 2 }))).toBe('REQUESTER_ERROR');
    });

    it('answers the refusal with the request id, its version and the registered return URL', () => {
      const result = read({ version: '1.4', requestId: 'b'.repeat(32), requestTime: new Date(0) });
      expect(result).toMatchObject({
        kind: 'refused',
        replyTo: { requestId: 'b'.repeat(32), version: '1.4', returnUrl: BASE.returnUrl },
      });
    });
  });
});
