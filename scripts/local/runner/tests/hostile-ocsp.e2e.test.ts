/**
 * The public OCSP endpoint of the running local pipeline, played by someone who wants HSM signatures
 * from it (each one a signature on the cluster the signer uses): a real certificate's serial paired with
 * a fresh random one in every request, with and without a nonce, over POST and GET; serials never
 * issued; and, among them, a real relying party's requests. The responder's HSM signatures are counted
 * at its HSM login (the runner hosts it in this process): at most one per certificate state, and
 * openssl still verifies the answers for the real certificate, before and after its revocation.
 */
import { X509Certificate, createHash, randomBytes } from 'node:crypto';
import { CertID, OCSPRequest, Request, TBSRequest, id_pkix_ocsp_nonce } from '@peculiar/asn1-ocsp';
import { BasicOCSPResponse, OCSPResponse, OCSPResponseStatus, id_pkix_ocsp_basic } from '@peculiar/asn1-ocsp';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, Certificate, Extension } from '@peculiar/asn1-x509';
import { loadCaConfig } from '@pipeline/config';
import type { Hsm } from '@pipeline/core/shared';
import pLimit from 'p-limit';
import { decorateCaSideHsm } from '../../../../lambdas/handlers';
import { pemToDer } from '@pipeline/der';
import { call, signSample, type SignRequestView } from '../../client';
import type { LocalPipeline } from '../pipeline';
import { startHostilePipeline, type HostilePipeline } from './support/hostile-pipeline';
import { issuingPem, ocspGet, ocspPost } from './support/relying-party';

jest.setTimeout(300_000);

/** Hostile requests per round; the figure docs/benchmarks.md reports is per 1,000. */
const HOSTILE = 1000;

/** HSM signatures made by the OCSP responder's login (its own token locally). */
let signatures = 0;
decorateCaSideHsm((hsm, tokenLabel) =>
  tokenLabel === loadCaConfig(process.env).ocspTokenLabel ? countingSignatures(hsm) : hsm,
);

function countingSignatures(hsm: Hsm): Hsm {
  return new Proxy(hsm, {
    get(target, property, receiver) {
      if (property === 'signDigest') {
        return (...args: Parameters<Hsm['signDigest']>) => {
          signatures++;
          return target.signDigest(...args);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

let hostile: HostilePipeline | undefined;
let pipeline: LocalPipeline;
let pki: string;

beforeAll(async () => {
  hostile = await startHostilePipeline('hostile-ocsp', { POOL_TARGETS: 'EC-P256=4', LOCAL_ACCESS_LOG: '0' });
  ({ pipeline, pki } = hostile);
}, 120_000);

afterAll(() => hostile?.stop());

const signOne = (index: number): Promise<SignRequestView> => signSample(pipeline.url, pipeline.apiKey, index);

const issuing = AsnConvert.parse(pemToDer(issuingPem), Certificate).tbsCertificate;
const sha1 = (data: ArrayBuffer | Buffer): Buffer =>
  createHash('sha1')
    .update(Buffer.from(data as ArrayBuffer))
    .digest();

/** A CertID as openssl builds it (SHA-1, NULL parameters) for a serial (hex) under the issuing CA. */
function certId(serialHex: string): CertID {
  const magnitude = Buffer.from(serialHex.length % 2 ? `0${serialHex}` : serialHex, 'hex');
  const serial = magnitude[0] & 0x80 ? Buffer.concat([Buffer.from([0]), magnitude]) : magnitude;
  return new CertID({
    hashAlgorithm: new AlgorithmIdentifier({ algorithm: '1.3.14.3.2.26', parameters: null }),
    issuerNameHash: new OctetString(sha1(Buffer.from(AsnConvert.serialize(issuing.subject)))),
    issuerKeyHash: new OctetString(sha1(issuing.subjectPublicKeyInfo.subjectPublicKey)),
    serialNumber: new Uint8Array(serial).buffer,
  });
}

/** An OCSP request (DER) about the serials given, with a fresh 16-byte nonce or without one. */
function ocspRequest(serials: readonly string[], nonce: boolean): Buffer {
  const extensions = nonce
    ? [
        new Extension({
          extnID: id_pkix_ocsp_nonce,
          critical: false,
          extnValue: new OctetString(AsnConvert.serialize(new OctetString(randomBytes(16)))),
        }),
      ]
    : undefined;
  const request = new OCSPRequest({
    tbsRequest: new TBSRequest({
      requestList: serials.map((s) => new Request({ reqCert: certId(s) })),
      ...(extensions ? { requestExtensions: extensions } : {}),
    }),
  });
  return Buffer.from(AsnConvert.serialize(request));
}

const serialOf = (id: CertID): string =>
  Buffer.from(id.serialNumber)
    .toString('hex')
    .replace(/^(00)+/, '');

/** What came back: an unsigned error status, or the serials a signed response names. */
function read(der: Buffer): { status: string; serials: string[] } {
  const response = AsnConvert.parse(der, OCSPResponse);
  const status = OCSPResponseStatus[response.responseStatus];
  if (response.responseStatus !== OCSPResponseStatus.successful) return { status, serials: [] };
  expect(response.responseBytes?.responseType).toBe(id_pkix_ocsp_basic);
  const basic = AsnConvert.parse(response.responseBytes!.response.buffer, BasicOCSPResponse);
  return { status, serials: basic.tbsResponseData.responses.map((r) => serialOf(r.certID)) };
}

/**
 * One round of the attack: a quarter each of (real + random serial, no nonce, POST), (real + random
 * serial, nonce, POST), (a serial never issued, nonce, GET), (the real serial alone, a fresh nonce,
 * POST), ten at a time. Returns what came back.
 */
async function attack(realSerial: string): Promise<Array<{ status: string; serials: string[] }>> {
  const limit = pLimit(10);
  return Promise.all(
    Array.from({ length: HOSTILE }, (_, i) =>
      limit(async () => {
        const random = randomBytes(16).toString('hex').replace(/^0+/, '');
        let res: Response;
        if (i % 4 === 2) {
          const encoded = encodeURIComponent(ocspRequest([random], true).toString('base64'));
          res = await fetch(`${pki}/ocsp/${encoded}`);
        } else {
          const body =
            i % 4 === 3 ? ocspRequest([realSerial], true) : ocspRequest([realSerial, random], i % 4 === 1);
          res = await fetch(`${pki}/ocsp`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/ocsp-request' },
            body: new Uint8Array(body),
          });
        }
        expect(res.status).toBe(200);
        return read(Buffer.from(await res.arrayBuffer()));
      }),
    ),
  );
}

test('a real serial paired with random ones, nonces, serials never issued: at most one HSM signature per certificate state, and openssl still verifies', async () => {
  const view = await signOne(0);
  const leafPem = view.certificate!;
  const realSerial = new X509Certificate(leafPem).serialNumber.toLowerCase().replace(/^(00)+/, '');
  const before = signatures;

  // A relying party asks (openssl, with a nonce): the certificate's first state, one signature.
  const first = await ocspPost(pki, leafPem);
  expect(first.stderr).toContain('Response verify OK');
  expect(first.stdout).toMatch(/leaf\.pem: good/);
  const good = signatures - before;

  const answers = await attack(realSerial);
  const hostile = signatures - before - good;
  process.stdout.write(`OCSP: ${hostile} HSM signatures for ${HOSTILE} hostile requests\n`);
  expect(good).toBe(1);
  // No signed answer names a serial this CA never issued, and the flood bought no signature.
  for (const answer of answers) expect(answer.serials.filter((s) => s !== realSerial)).toEqual([]);
  expect(answers.filter((a) => a.status === 'successful').length).toBe(HOSTILE / 4);
  expect(hostile).toBe(0);

  // The relying party still gets answers that verify, by POST and by GET.
  const post = await ocspPost(pki, leafPem);
  expect(post.stderr).toContain('Response verify OK');
  expect(post.stdout).toMatch(/leaf\.pem: good/);
  const get = await ocspGet(pki, leafPem);
  expect(get.stderr).toContain('Response verify OK');
  expect(get.stdout).toMatch(/Cert Status: good/);

  // A new state (revoked through the API): one more signature, whatever the flood does.
  const revoked = await call(`${pipeline.url}/sign-requests/${view.id}/revocation`, {
    apiKey: pipeline.apiKey,
    body: { reason: 'keyCompromise' },
  });
  expect(revoked.status).toBe(200);
  const again = await attack(realSerial);
  for (const answer of again) expect(answer.serials.filter((s) => s !== realSerial)).toEqual([]);
  const after = await ocspPost(pki, leafPem);
  expect(after.stderr).toContain('Response verify OK');
  expect(after.stdout).toMatch(/leaf\.pem: revoked/);
  expect(after.stdout).toMatch(/Reason: keyCompromise/);
  expect(signatures - before).toBe(2);
});
