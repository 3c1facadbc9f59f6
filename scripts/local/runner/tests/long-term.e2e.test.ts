/**
 * Signatures that validate offline for years, proven with tools nobody here wrote. Documents are signed
 * through the running local pipeline as an e-service does (the client modules, a real login at the local
 * OpenID Provider) and then judged by:
 * - EU DSS with its unmodified default policy and no network (only what the signature carries, as an
 *   archive validator has): PAdES-BASELINE-LT and -LTA and CAdES-BASELINE-LT and -LTA, TOTAL_PASSED now
 *   and as of a date after the one-time certificate expired (CAdES-LTA also three years on, where -LT no
 *   longer passes); a changed byte in the signed content fails; with an external TSA (a second local one
 *   of another PKI) B-LT carries that TSA's certificate status;
 * - `openssl ts -verify` on the signature time-stamps and on the document time-stamp, `openssl cms -verify`
 *   on every CMS, and `openssl ts -query` / `-reply` against the public TSA endpoint;
 * and a TSA that does not answer ends a request TSA_UNAVAILABLE, unless its minimumLevel accepts B-B; the
 * B-LT OCSP response comes from the CA with the certificate (the responder's login signs nothing for it).
 */
import { X509Certificate, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AsnConvert } from '@peculiar/asn1-schema';
import { ContentInfo, SignerInfos } from '@peculiar/asn1-cms';
import { HttpTimeStamper } from '@pipeline/adapters/lambda';
import { derChildren } from '@pipeline/der';
import { derElement, outerLength } from '../../../../lambdas/der/src/der';
import { PDFDocument, PDFDict, PDFName } from '@cantoo/pdf-lib';
import {
  ID_AA_ATS_HASH_INDEX_V3,
  ID_AA_ETS_ARCHIVE_TIMESTAMP_V3,
  archiveTimeStampInput,
} from '../../../client/src/cades-archive';
import { obtainIdToken } from '../../../client/src/oidc-login';
import { signDocument, SigningFailedError } from '../../../client/src/sign-document';
import { SigningClient } from '../../../client/src/signing-client';
import { TEST_CITIZENS } from '../../idp/citizens';
import { CLIENT_IDS } from '../../idp/clients';
import { localIssuer } from '../../client';
import { LOCAL_DIR } from '../../paths';
import { runOpenssl, opensslCmsVerify } from '../../verify/openssl';
import { minimalPdf, validatePdfSignatures } from '../../verify/pdf-validator';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';
import { startExternalTsa } from './support/external-tsa';
import { ocspPost } from './support/relying-party';
import { decorateCaSideHsm } from '../../../../lambdas/handlers';
import { loadCaConfig } from '@pipeline/config';
import type { Hsm } from '@pipeline/core/shared';

jest.setTimeout(300_000);

const DAY_MS = 86_400_000;
const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
const tsaPem = readFileSync(join(LOCAL_DIR, 'ca', 'tsa.pem'), 'utf8');
const SIGNATURE_TIME_STAMP = '1.2.840.113549.1.9.16.2.14';

let pipeline: LocalPipeline;
let client: SigningClient;
let pki: string;

/**
 * HSM signatures by the OCSP responder's own login (the `ocsp` function, hosted in this process), told
 * from the CA's login to the same token by the function that made it.
 */
let responderSignatures = 0;
decorateCaSideHsm((hsm, tokenLabel) =>
  tokenLabel === loadCaConfig(process.env).ocspTokenLabel &&
  /handlers[\\/]ocsp[\\/]/.test(new Error().stack ?? '')
    ? new Proxy(hsm, {
        get(target, property, receiver) {
          if (property === 'signDigest') {
            return (...args: Parameters<Hsm['signDigest']>) => {
              responderSignatures++;
              return target.signDigest(...args);
            };
          }
          const value: unknown = Reflect.get(target, property, receiver);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      })
    : hsm,
);

beforeAll(async () => {
  pipeline = await startLocalPipeline({
    resourcePrefix: `lt-${randomBytes(3).toString('hex')}-`,
    log: () => undefined,
    env: { PORT: '0', POOL_TARGETS: 'EC-P256=10', LOCAL_KEYGEN_INTERVAL_SECONDS: '3600', LOG_LEVEL: 'WARN' },
  });
  await pipeline.runKeygen();
  client = new SigningClient({ apiUrl: pipeline.url, apiKey: pipeline.apiKey });
  pki = pipeline.url.replace(/\/v1$/, '/pki');
  // The root CRL (status of the issuing CA and the TSA) must be published before B-LT can be reached.
  for (let i = 0; i < 100 && !(await fetch(`${pki}/root.crl`)).ok; i++) await sleep(100);
});

afterAll(async () => {
  await pipeline?.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type Level = 'B-B' | 'B-T' | 'B-LT' | 'B-LTA';

async function sign(document: Buffer, options: { pdf?: boolean; level?: Level; minimumLevel?: Level }) {
  return signDocument({
    client,
    document,
    pdf: options.pdf,
    level: options.level,
    minimumLevel: options.minimumLevel,
    tsaUrl: `${pki}/tsa`,
    login: async (nonce) =>
      (
        await obtainIdToken({
          issuer: localIssuer(),
          clientId: CLIENT_IDS.signingService,
          personalIdentityNumber: TEST_CITIZENS[1].personalIdentityNumber,
          nonce,
        })
      ).idToken,
  });
}

/** DSS, default policy, offline, trusting only our root; `at` is the validation time. */
function dss(signed: Buffer, at: Date, detachedContent?: Buffer) {
  const report = validatePdfSignatures({
    pdf: signed,
    trustedRootsPem: [rootPem],
    policy: 'default',
    validationTime: at,
    ...(detachedContent ? { detachedContent } : {}),
  });
  return report.signatures.map((s) => ({
    format: s.signatureFormat,
    indication: s.indication,
    subIndication: s.subIndication,
    errors: s.errors.map((e) => e.key),
  }));
}

/** The SignedData's certificates and RevocationInfoChoices (DER each). */
function signedDataSets(cms: Buffer): { certificates: Buffer[]; crls: Buffer[] } {
  const fields = derChildren(Buffer.from(AsnConvert.parse(cms, ContentInfo).content));
  const set = (tag: number): Buffer[] => {
    const field = fields.find((f) => f[0] === tag);
    return field ? derChildren(field) : [];
  };
  return { certificates: set(0xa0), crls: set(0xa1) };
}

/** The signature time-stamp token (DER) of a CMS's only SignerInfo, and the signature value it covers. */
function signatureTimeStamp(cms: Buffer): { token: Buffer; signatureValue: Buffer } {
  // The schema class cannot read a CRL among SignedData.crls: take the signerInfos field alone.
  const signedData = derChildren(Buffer.from(AsnConvert.parse(cms, ContentInfo).content));
  const [signer] = AsnConvert.parse(signedData[signedData.length - 1], SignerInfos);
  const attribute = signer.unsignedAttrs?.find((a) => a.attrType === SIGNATURE_TIME_STAMP);
  if (!attribute) throw new Error('no signature time-stamp');
  return {
    token: Buffer.from(attribute.attrValues[0]),
    signatureValue: Buffer.from(signer.signature.buffer),
  };
}

/** The first value of an unsigned attribute of a CMS's only SignerInfo, or undefined. */
function unsignedAttribute(cms: Buffer, oid: string): Buffer | undefined {
  const signedData = derChildren(Buffer.from(AsnConvert.parse(cms, ContentInfo).content));
  const [signer] = AsnConvert.parse(signedData[signedData.length - 1], SignerInfos);
  const attribute = signer.unsignedAttrs?.find((a) => a.attrType === oid);
  return attribute ? Buffer.from(attribute.attrValues[0]) : undefined;
}

/** The archive time-stamp's imprint of a B-LTA CMS: computed over the CMS as it was before the attribute. */
function archiveImprintOf(lta: Buffer, content: Buffer): Buffer {
  // ContentInfo { type, [0] { SignedData { ..., SET { SignerInfo { ..., [1] unsignedAttrs } } } } }
  const [type, explicit] = derChildren(lta);
  const fields = derChildren(derChildren(explicit)[0]);
  const signerFields = derChildren(derChildren(fields[fields.length - 1])[0]);
  const unsigned = derChildren(signerFields[signerFields.length - 1]);
  const signerInfo = derElement(
    0x30,
    Buffer.concat([...signerFields.slice(0, -1), derElement(0xa1, Buffer.concat(unsigned.slice(0, -1)))]),
  );
  const signedData = derElement(0x30, Buffer.concat([...fields.slice(0, -1), derElement(0x31, signerInfo)]));
  const before = derElement(0x30, Buffer.concat([type, derElement(0xa0, signedData)]));
  return archiveTimeStampInput(before, content).imprint;
}

/** `openssl ts -verify` of a token over a SHA-256 digest, trusting our root only. */
function tsVerifyDigest(token: Buffer, digest: Buffer) {
  return runOpenssl(
    [
      'ts',
      '-verify',
      '-token_in',
      '-in',
      'token.der',
      '-digest',
      digest.toString('hex'),
      '-CAfile',
      'root.pem',
      '-untrusted',
      'tsa.pem',
    ],
    { 'token.der': token, 'root.pem': rootPem, 'tsa.pem': tsaPem },
  );
}

/** `openssl ts -verify` of a token over `data`, trusting our root only. */
function tsVerify(token: Buffer, data: Buffer) {
  return runOpenssl(
    [
      'ts',
      '-verify',
      '-token_in',
      '-in',
      'token.der',
      '-data',
      'data.bin',
      '-CAfile',
      'root.pem',
      '-untrusted',
      'tsa.pem',
    ],
    { 'token.der': token, 'data.bin': data, 'root.pem': rootPem, 'tsa.pem': tsaPem },
  );
}

/** The CMS of a PDF's signature field with /SubFilter ETSI.CAdES.detached. */
async function pdfSignatureCms(pdf: Buffer): Promise<Buffer> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  for (const field of doc.getForm().getFields()) {
    const value = field.acroField.dict.lookup(PDFName.of('V'));
    if (
      value instanceof PDFDict &&
      value.lookup(PDFName.of('SubFilter'))?.toString() === '/ETSI.CAdES.detached'
    ) {
      const hex = value.lookup(PDFName.of('Contents'))!.toString().replace(/[<>]/g, '');
      const padded = Buffer.from(hex, 'hex');
      // /Contents is zero-padded after the DER.
      return padded.subarray(0, outerLength(padded));
    }
  }
  throw new Error('no CAdES signature in the PDF');
}

test('CAdES B-LT: DSS passes it offline now and after the certificate expired; openssl verifies CMS and time-stamp; a changed byte fails', async () => {
  const content = Buffer.from(`a tax declaration ${randomBytes(8).toString('hex')}\n`);
  const responderBefore = responderSignatures;
  const signed = await sign(content, {});
  expect(signed.level).toBe('B-LT');
  expect(signed.result.reachedLevel).toBe('B-LT');
  // The OCSP response came with the certificate from the CA: the responder signed nothing for it ...
  expect(responderSignatures).toBe(responderBefore);
  // ... and still answers for it when a relying party asks (one signature: a state it never signed).
  expect((await ocspPost(pki, signed.result.certificate!)).stdout).toMatch(/Cert Status: good/);
  expect(responderSignatures).toBe(responderBefore + 1);
  const cms = signed.output;
  expect(opensslCmsVerify({ cms, content, rootPem }).ok).toBe(true);
  const { token, signatureValue } = signatureTimeStamp(cms);
  expect(tsVerify(token, signatureValue).stdout).toContain('Verification: OK');
  // The token is over the signature value, not over something else.
  expect(tsVerify(token, Buffer.concat([signatureValue, Buffer.from([0])])).ok).toBe(false);

  const leafExpiry = new X509Certificate(signed.result.certificate!).validToDate;
  expect(leafExpiry.getTime() - Date.now()).toBeLessThanOrEqual(DAY_MS + 120_000);
  for (const at of [new Date(), new Date(leafExpiry.getTime() + DAY_MS)]) {
    expect(dss(cms, at, content)).toEqual([
      { format: 'CAdES-BASELINE-LT', indication: 'TOTAL_PASSED', subIndication: null, errors: [] },
    ]);
  }
  const changed = Buffer.from(content);
  changed[0] ^= 1;
  expect(dss(cms, new Date(), changed)[0].indication).toBe('TOTAL_FAILED');
  expect(opensslCmsVerify({ cms, content: changed, rootPem }).ok).toBe(false);
});

test('CAdES B-LTA: the client adds an archive time-stamp v3; DSS passes it offline now, after the certificate expired and three years on, where B-LT no longer passes; a changed byte fails', async () => {
  const content = Buffer.from(`an archived pension decision ${randomBytes(8).toString('hex')}\n`);
  const lt = await sign(content, { level: 'B-LT' });
  const lta = await sign(content, { level: 'B-LTA' });
  expect(lta.level).toBe('B-LTA');
  // The service makes B-LT; the archive time-stamp is the client's (it covers the content).
  expect(lta.result.reachedLevel).toBe('B-LT');
  expect(opensslCmsVerify({ cms: lta.output, content, rootPem }).ok).toBe(true);

  // The archive time-stamp: an RFC 3161 token from our TSA over the imprint EN 319 122-1 defines, with
  // the ats-hash-index-v3 in its own unsigned attributes.
  const archive = unsignedAttribute(lta.output, ID_AA_ETS_ARCHIVE_TIMESTAMP_V3);
  expect(archive).toBeDefined();
  expect(tsVerifyDigest(archive!, archiveImprintOf(lta.output, content)).stdout).toContain(
    'Verification: OK',
  );
  expect(unsignedAttribute(archive!, ID_AA_ATS_HASH_INDEX_V3)).toBeDefined();

  const leafExpiry = new X509Certificate(lta.result.certificate!).validToDate;
  const threeYears = new Date(Date.now() + 3 * 365 * DAY_MS);
  for (const at of [new Date(), new Date(leafExpiry.getTime() + DAY_MS), threeYears]) {
    expect(dss(lta.output, at, content)).toEqual([
      { format: 'CAdES-BASELINE-LTA', indication: 'TOTAL_PASSED', subIndication: null, errors: [] },
    ]);
  }
  // Without it, the OCSP responder's certificate has long expired and nothing proves the validation data
  // existed before: not passed.
  const ltLater = dss(lt.output, threeYears, content);
  expect(ltLater[0].indication).not.toBe('TOTAL_PASSED');
  const changed = Buffer.from(content);
  changed[3] ^= 1;
  expect(dss(lta.output, new Date(), changed)[0].indication).toBe('TOTAL_FAILED');
});

test('PAdES B-LT and B-LTA: DSS passes both offline now and after the certificate expired; openssl verifies the time-stamps; a changed byte fails', async () => {
  const pdf = minimalPdf(`Pension decision ${randomBytes(4).toString('hex')}`);
  const lt = await sign(pdf, { pdf: true, level: 'B-LT' });
  const lta = await sign(pdf, { pdf: true, level: 'B-LTA' });
  expect(lt.level).toBe('B-LT');
  expect(lta.level).toBe('B-LTA');
  expect(lta.result.reachedLevel).toBe('B-LT');

  const leafExpiry = new X509Certificate(lta.result.certificate!).validToDate;
  for (const at of [new Date(), new Date(leafExpiry.getTime() + DAY_MS)]) {
    expect(dss(lt.output, at)).toEqual([
      { format: 'PAdES-BASELINE-LT', indication: 'TOTAL_PASSED', subIndication: null, errors: [] },
    ]);
    expect(dss(lta.output, at)).toEqual([
      { format: 'PAdES-BASELINE-LTA', indication: 'TOTAL_PASSED', subIndication: null, errors: [] },
    ]);
  }
  // Years on, once the OCSP responder's certificate expired, only the document time-stamp keeps it valid.
  const later = new Date(Date.now() + 400 * DAY_MS);
  expect(dss(lta.output, later)[0].indication).toBe('TOTAL_PASSED');
  expect(dss(lt.output, later)[0].indication).not.toBe('TOTAL_PASSED');

  const cms = await pdfSignatureCms(lta.output);
  const { token, signatureValue } = signatureTimeStamp(cms);
  expect(tsVerify(token, signatureValue).stdout).toContain('Verification: OK');

  // The document's bytes changed inside the signed range (the page text): the signature fails.
  const tampered = Buffer.from(lta.output);
  const at = tampered.indexOf('Pension decision');
  tampered[at] = 'p'.charCodeAt(0);
  expect(dss(tampered, new Date())[0].indication).toBe('TOTAL_FAILED');
});

test('the public TSA: openssl ts -query / -reply / -verify; a SHA-1 imprint is refused badAlg', async () => {
  const data = Buffer.from(`archive ${randomBytes(8).toString('hex')}`);
  const query = runOpenssl(
    ['ts', '-query', '-data', 'data.bin', '-sha256', '-cert', '-out', 'q.tsq'],
    { 'data.bin': data },
    ['q.tsq'],
  );
  expect(query.ok).toBe(true);
  const reply = await post(`${pki}/tsa`, query.outputs['q.tsq']);
  expect(reply.status).toBe(200);
  expect(reply.type).toBe('application/timestamp-reply');
  const text = runOpenssl(['ts', '-reply', '-in', 'r.tsr', '-text'], { 'r.tsr': reply.body });
  expect(text.stdout).toContain('Status: Granted.');
  expect(text.stdout).toContain('Policy OID: 1.3.6.1.4.1.32473.1.2');
  expect(text.stdout).toMatch(/Accuracy: 0x01 seconds/);
  const verified = runOpenssl(
    ['ts', '-verify', '-in', 'r.tsr', '-queryfile', 'q.tsq', '-CAfile', 'root.pem', '-untrusted', 'tsa.pem'],
    { 'r.tsr': reply.body, 'q.tsq': query.outputs['q.tsq'], 'root.pem': rootPem, 'tsa.pem': tsaPem },
  );
  expect(verified.stdout).toContain('Verification: OK');

  const weak = runOpenssl(
    ['ts', '-query', '-data', 'data.bin', '-sha1', '-out', 'q.tsq'],
    { 'data.bin': data },
    ['q.tsq'],
  );
  const refused = await post(`${pki}/tsa`, weak.outputs['q.tsq']);
  const refusedText = runOpenssl(['ts', '-reply', '-in', 'r.tsr', '-text'], { 'r.tsr': refused.body });
  expect(refusedText.stdout).toContain('Status: Rejected.');
  expect(refusedText.stdout).toContain('unrecognized or unsupported algorithm identifier');
  // Two tokens, two serials.
  const again = await post(`${pki}/tsa`, query.outputs['q.tsq']);
  const serialOf = (der: Buffer): string =>
    /Serial number: (\S+)/.exec(
      runOpenssl(['ts', '-reply', '-in', 'r.tsr', '-text'], { 'r.tsr': der }).stdout,
    )![1];
  expect(serialOf(again.body)).not.toBe(serialOf(reply.body));
});

test('an external TSA by URL: its tokens are used only when they chain to the configured anchors', async () => {
  const data = randomBytes(64);
  const trusted = new HttpTimeStamper(`${pki}/tsa`, [rootPem]);
  const token = await trusted.timeStamp(data, 'SHA-256');
  expect(tsVerify(token, data).stdout).toContain('Verification: OK');
  // Another root: the same TSA's tokens are refused, as an unknown TSA's would be.
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const otherRoot = runOpenssl(
    ['req', '-new', '-x509', '-key', 'k.pem', '-subj', '/CN=Other Root', '-days', '1', '-out', 'r.pem'],
    { 'k.pem': privateKey.export({ type: 'pkcs8', format: 'pem' }) },
    ['r.pem'],
  ).outputs['r.pem'].toString();
  const untrusted = new HttpTimeStamper(`${pki}/tsa`, [otherRoot]);
  await expect(untrusted.timeStamp(data, 'SHA-256')).rejects.toMatchObject({ code: 'TSA_UNAVAILABLE' });
});

test('an external TSA (TSA_URL): B-LT carries its root and its certificate status (the CRL its certificate names); DSS passes it offline trusting both roots', async () => {
  const external = await startExternalTsa();
  const dir = mkdtempSync(join(tmpdir(), 'external-tsa-'));
  const anchors = join(dir, 'roots.pem');
  writeFileSync(anchors, external.rootPem);
  await replaceConsumers({ TSA_URL: external.url, TSA_TRUST_ANCHORS: anchors });
  try {
    const content = Buffer.from(`time-stamped elsewhere ${randomBytes(8).toString('hex')}\n`);
    const signed = await sign(content, {});
    expect(signed.level).toBe('B-LT');
    // The signature time-stamp is the external TSA's: it verifies under its root, not under ours.
    const { token, signatureValue } = signatureTimeStamp(signed.output);
    const externalVerify = runOpenssl(
      ['ts', '-verify', '-token_in', '-in', 'token.der', '-data', 'data.bin', '-CAfile', 'root.pem'],
      { 'token.der': token, 'data.bin': signatureValue, 'root.pem': external.rootPem },
    );
    expect(externalVerify.stdout).toContain('Verification: OK');
    expect(tsVerify(token, signatureValue).ok).toBe(false);
    // Its root and the CRL its certificate names are in the SignedData, beside our validation data.
    expect(external.crlFetches()).toBeGreaterThan(0);
    const { certificates, crls } = signedDataSets(signed.output);
    expect(certificates.some((c) => c.equals(external.rootDer))).toBe(true);
    expect(crls.some((c) => c.equals(external.crlDer))).toBe(true);

    const leafExpiry = new X509Certificate(signed.result.certificate!).validToDate;
    for (const at of [new Date(), new Date(leafExpiry.getTime() + DAY_MS)]) {
      const report = validatePdfSignatures({
        pdf: signed.output,
        trustedRootsPem: [rootPem, external.rootPem],
        policy: 'default',
        validationTime: at,
        detachedContent: content,
      });
      expect(
        report.signatures.map((s) => ({
          format: s.signatureFormat,
          indication: s.indication,
          errors: s.errors,
        })),
      ).toEqual([{ format: 'CAdES-BASELINE-LT', indication: 'TOTAL_PASSED', errors: [] }]);
    }
  } finally {
    await replaceConsumers({});
    await external.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a TSA that does not answer: TSA_UNAVAILABLE, unless the request accepts B-B; then B-B is what it says', async () => {
  // The only consumer is replaced by one that invokes a TSA function that is not there, as in an outage.
  await replaceConsumers({ TSA_FUNCTION_NAME: 'absent-timestamper' });
  try {
    const content = Buffer.from(`no time-stamp today ${randomBytes(4).toString('hex')}`);
    const refused = await sign(content, { level: 'B-T' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(SigningFailedError);
    expect((refused as SigningFailedError).code).toBe('TSA_UNAVAILABLE');
    const lowered = await sign(content, { level: 'B-LT', minimumLevel: 'B-B' });
    expect(lowered.level).toBe('B-B');
    expect(lowered.result.reachedLevel).toBe('B-B');
    expect(() => signatureTimeStamp(lowered.output)).toThrow('no signature time-stamp');
    expect(opensslCmsVerify({ cms: lowered.output, content, rootPem }).ok).toBe(true);
  } finally {
    await replaceConsumers({});
  }
});

async function replaceConsumers(overrides: Record<string, string>): Promise<void> {
  const old = pipeline.consumers.splice(0);
  for (const consumer of old) consumer.child.kill('SIGTERM');
  await Promise.all(old.map((c) => c.exited));
  const consumer = pipeline.startConsumer(overrides);
  for (let i = 0; i < 300 && !consumer.isReady(); i++) await sleep(100);
  expect(consumer.isReady()).toBe(true);
}

async function post(
  url: string,
  body: Buffer,
): Promise<{ status: number; type: string | null; body: Buffer }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/timestamp-query' },
    body: new Uint8Array(body),
  });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    body: Buffer.from(await res.arrayBuffer()),
  };
}
