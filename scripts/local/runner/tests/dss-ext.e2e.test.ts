/**
 * The DSS-Ext door against the running local pipeline, as a Swedish e-service and a citizen use it: an
 * e-service written from the specifications (scripts/local/dss-eservice, xmlsec1 signs its SignRequest)
 * posts three tasks (XAdES BES over an XML document, PAdES over a PDF, a CAdES) through the citizen's
 * browser (Debian's Chromium); the citizen approves the SignMessage at the local SAML IdP; the door's
 * signed SignResponse reaches the e-service's return URL, where xmlsec1 verifies it and the framework's
 * XSDs validate it; the e-service assembles its three signatures and EU DSS validates each offline.
 * Then the framework's refusals, each as the attacker or the misbehaving party would cause it.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DOMParser } from '@xmldom/xmldom';
import type { Browser, ElementHandle, Page } from 'puppeteer-core';
import { launchChromium } from '../../verify/chromium';
import {
  assembleCms,
  assembleXades,
  CMS_ATTRIBUTES,
  CONTENT,
  preparedPdf,
  SIGNED_INFO,
  type SignedTaskResult,
} from '../../dss-eservice/tasks';
import { TEST_CITIZENS } from '../../idp/citizens';
import { LOCAL_DIR } from '../../paths';
import type { PreparedPdf } from '../../../client/src/pdf-signature';
import {
  newRequestId,
  responseSignatureVerifies,
  signRequest,
  signRequestTemplate,
  type EServiceKey,
  type EServiceRequest,
} from '../../dss-eservice/sign-request';
import type { Misbehaviour } from '../../saml-idp/idp';
import { throwawayKeyPair } from '../../saml-idp/keys';
import { parseSamlAuthContext, readAuthContextExtension } from '../../verify/auth-context';
import {
  ensurePdfValidator,
  minimalPdf,
  validatePdfSignatures,
  type PdfValidationReport,
} from '../../verify/pdf-validator';
import { validateXsd } from '../../verify/xsd';
import { startSimpleSamlPhp, type SimpleSamlIdp } from '../../simplesamlphp';
import { localIssuer } from '../../client';
import { startLocalDemo } from '../../demo-eservice';
import type { DemoService } from '../../../client/demo/server';
import { freePort } from '../dss-ext';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

jest.setTimeout(300_000);

const CITIZEN = TEST_CITIZENS[0]!;
const PNR = 'urn:oid:1.2.752.29.4.13';
const MESSAGE = 'I sign the lease of flat 12, the lease as XML, the PDF and the CMS.';
const DSS = 'urn:oasis:names:tc:dss:1.0:core:schema';
const CSIG = 'http://id.elegnamnden.se/csig/1.1/dss-ext/ns';

let pipeline: LocalPipeline;
let browser: Browser;
let eservice: Server;
let returnUrl: string;
/** The demo e-service page, the local e-service's first return URL. */
let demo: DemoService;
let demoPort: number;
/** The SignResponses the e-service's return URL received (form fields), in order. */
const received: URLSearchParams[] = [];
let PDF: { pdf: PreparedPdf; attributes: Buffer };
/** Debian's SimpleSAMLphp, an identity provider nobody here wrote, in the federation beside the local one. */
let simpleSaml: SimpleSamlIdp | undefined;
const FRIDA = {
  username: 'frida',
  password: 'kranstege-1977',
  attributes: {
    'urn:oid:1.2.752.29.4.13': '197705232382',
    'urn:oid:2.5.4.42': 'Frida',
    'urn:oid:2.5.4.4': 'Kranstege',
    'urn:oid:2.16.840.1.113730.3.1.241': 'Frida Kranstege',
  },
};

beforeAll(async () => {
  ensurePdfValidator();
  PDF = await preparedPdf();
  eservice = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!DOCTYPE html><title>received</title><p id="received">received</p>');
    });
  });
  await new Promise<void>((resolve) => eservice.listen(0, '127.0.0.1', resolve));
  returnUrl = `http://127.0.0.1:${(eservice.address() as AddressInfo).port}/dss/response`;
  demoPort = await freePort();
  pipeline = await startLocalPipeline({
    resourcePrefix: `dssext-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      LOCAL_DSSEXT: '1',
      LOCAL_DSSEXT_RETURN_URLS: `http://127.0.0.1:${demoPort}/dss/response,${returnUrl}`,
      LOCAL_SAML_IDP_TEST_KNOBS: '1',
      POOL_TARGETS: 'EC-P256=12',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
    },
    samlIdentityProviders: async (spMetadataXml) => {
      simpleSaml = await startSimpleSamlPhp({ spMetadataXml, users: [FRIDA] });
      return [simpleSaml.metadataXml];
    },
  });
  await pipeline.runKeygen();
  demo = await startLocalDemo({
    apiUrl: pipeline.url,
    apiKey: pipeline.apiKey,
    issuer: localIssuer(),
    port: demoPort,
    dssExt: pipeline.dssExt!,
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await pipeline?.stop();
  await simpleSaml?.close();
  await demo?.stop();
  await new Promise((resolve) => eservice?.close(resolve));
});

function door() {
  const dss = pipeline.dssExt!;
  return { ...dss, key: dss.eservice.key as EServiceKey };
}

function eserviceRequest(change: Partial<EServiceRequest> = {}): EServiceRequest {
  const dss = door();
  return {
    requestId: newRequestId(),
    returnUrl,
    signer: [{ name: PNR, value: CITIZEN.personalIdentityNumber }],
    identityProvider: dss.idp.entityId,
    signRequester: dss.eservice.entityId,
    signService: dss.signServiceEntityId,
    signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256',
    loa: ['http://id.elegnamnden.se/loa/1.0/loa3'],
    requestedCertAttributes: [
      { ref: '2.5.4.5', samlNames: [PNR], required: true },
      { ref: '2.5.4.42', samlNames: ['urn:oid:2.5.4.42'] },
      { ref: '2.5.4.4', samlNames: ['urn:oid:2.5.4.4'] },
    ],
    signMessage: { text: MESSAGE, mustShow: true },
    tasks: [
      {
        id: 'xml',
        sigType: 'XML',
        adesType: 'BES',
        toBeSignedBytes: SIGNED_INFO,
        adesObject: { signatureId: 'sig-1' },
      },
      { id: 'pdf', sigType: 'PDF', adesType: 'BES', toBeSignedBytes: PDF.attributes },
      { id: 'cms', sigType: 'CMS', adesType: 'BES', toBeSignedBytes: CMS_ATTRIBUTES },
    ],
    ...change,
  };
}

/** The form the e-service's page auto-posts to the door (ELN-0607 §3.1). */
function formPage(action: string, fields: Record<string, string>): string {
  const esc = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  return (
    `<!DOCTYPE html><html><body><form method="post" action="${esc(action)}">` +
    Object.entries(fields)
      .map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}"/>`)
      .join('') +
    '</form><script>document.forms[0].submit()</script></body></html>'
  );
}

function fieldsOf(request: EServiceRequest, key = door().key): Record<string, string> {
  return {
    Binding: 'POST/XML/1.0',
    RelayState: request.requestId!,
    EidSignRequest: signRequest(signRequestTemplate(request), key),
  };
}

/** Waits until the e-service received one more SignResponse than before. */
async function nextResponse(before: number, page: Page): Promise<Document> {
  const deadline = Date.now() + 60_000;
  while (received.length <= before) {
    if (Date.now() > deadline)
      throw new Error(
        `no SignResponse arrived; the browser is at ${page.url()}: ${(await page.content()).slice(0, 600)}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
  const form = received[before]!;
  const xml = Buffer.from(form.get('EidSignResponse') ?? '', 'base64').toString('utf8');
  // The e-service's checks: signed by the service's key (xmlsec1), valid by the framework's schemas.
  expect(responseSignatureVerifies(xml, door().serviceCertPem)).toBe(true);
  expect(validateXsd(xml)).toEqual({ valid: true, errors: '' });
  expect(form.get('Binding')).toBe('POST/XML/1.0');
  const doc = new DOMParser().parseFromString(xml, 'text/xml');
  expect(doc.documentElement!.getAttribute('RequestID')).toBe(form.get('RelayState'));
  return doc as unknown as Document;
}

/** The form body the identity provider's page last posted to the door's ACS. */
let lastAcsPost: string | undefined;

/** The citizen's journey: the form posted, the login page, approve (or cancel), the SignResponse. */
async function journey(
  request: EServiceRequest,
  options: { misbehave?: Misbehaviour; action?: 'approve' | 'cancel'; key?: EServiceKey } = {},
): Promise<Document> {
  if (options.misbehave) door().idp.misbehaveNext(options.misbehave);
  const before = received.length;
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url() === `${door().url}/saml/acs`) lastAcsPost = r.postData();
  });
  try {
    await page.setContent(formPage(`${door().url}/sign`, fieldsOf(request, options.key)));
    await page.waitForSelector('#approve', { timeout: 60_000 });
    expect(new URL(page.url()).origin).toBe(door().idp.url);
    if (request.signMessage) expect(await page.content()).toContain(request.signMessage.text);
    await page.click(options.action === 'cancel' ? '#cancel' : '#approve');
    return await nextResponse(before, page);
  } finally {
    await context.close();
  }
}

const text = (doc: Document, ns: string, name: string): string[] =>
  Array.from(doc.getElementsByTagNameNS(ns, name)).map((e) => (e.textContent ?? '').trim());

function statusOf(doc: Document): { major: string; minor?: string } {
  const [major] = text(doc, DSS, 'ResultMajor');
  const [minor] = text(doc, DSS, 'ResultMinor');
  return {
    major: major!.replace('urn:oasis:names:tc:dss:1.0:resultmajor:', ''),
    ...(minor ? { minor } : {}),
  };
}

test('three tasks signed under one certificate for the citizen who approved the sign message; EU DSS passes each', async () => {
  const doc = await journey(eserviceRequest());
  expectThreeSignatures(doc, { idp: door().idp.entityId, pnr: CITIZEN.personalIdentityNumber });
});

test('the same without a sign message, the citizen logging in at SimpleSAMLphp', async () => {
  const request = eserviceRequest({
    identityProvider: simpleSaml!.entityId,
    signer: [{ name: PNR, value: FRIDA.attributes[PNR] }],
    signMessage: undefined,
  });
  const before = received.length;
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  try {
    await page.setContent(formPage(`${door().url}/sign`, fieldsOf(request)));
    await page.waitForSelector('#username', { timeout: 60_000 });
    expect(new URL(page.url()).origin).toBe(new URL(simpleSaml!.entityId).origin);
    await page.type('#username', FRIDA.username);
    await page.type('#password', FRIDA.password);
    await page.click('#submit_button');
    const doc = await nextResponse(before, page);
    expectThreeSignatures(doc, { idp: simpleSaml!.entityId, pnr: FRIDA.attributes[PNR] });
  } finally {
    await context.close();
  }
});

/** The e-service's judgement of a successful SignResponse: one certificate, three signatures EU DSS passes. */
function expectThreeSignatures(doc: Document, signer: { idp: string; pnr: string }): void {
  expect(statusOf(doc)).toEqual({ major: 'Success' });
  // One certificate, signer first, ending in the local root.
  const chain = text(doc, CSIG, 'X509Certificate').map(
    (b64) => new X509Certificate(Buffer.from(b64, 'base64')),
  );
  const root = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
  expect(chain.at(-1)!.fingerprint256).toBe(new X509Certificate(root).fingerprint256);
  const leaf = chain[0]!;
  expect(leaf.subject).toContain(`serialNumber=${signer.pnr}`);
  const context = parseSamlAuthContext(readAuthContextExtension(leaf.toString())!.contexts[0]!.contextInfo!);
  const [assertionRef] = text(doc, CSIG, 'AssertionRef');
  expect(context.authContextInfo).toMatchObject({
    IdentityProvider: signer.idp,
    AssertionRef: assertionRef,
  });
  expect(text(doc, CSIG, 'IdentityProvider')).toEqual([signer.idp]);
  // The e-service's three tasks, as it assembles its signatures from them.
  const tasks = Array.from(doc.getElementsByTagNameNS(CSIG, 'SignTaskData')).map((t) => {
    const one = (name: string) => (t.getElementsByTagNameNS(CSIG, name)[0]?.textContent ?? '').trim();
    const result: SignedTaskResult = {
      toBeSignedBytes: Buffer.from(one('ToBeSignedBytes'), 'base64'),
      signature: Buffer.from(one('Base64Signature'), 'base64'),
      ...(one('AdESObjectBytes') ? { adesObject: Buffer.from(one('AdESObjectBytes'), 'base64') } : {}),
    };
    return [t.getAttribute('SignTaskId'), result] as const;
  });
  const byId = new Map(tasks);
  expect([...byId.keys()]).toEqual(['xml', 'pdf', 'cms']);
  const certificatesDer = chain.slice(0, -1).map((c) => c.raw);
  const trust = { trustedRootsPem: [root], intermediatesPem: chain.slice(1, -1).map((c) => c.toString()) };
  const verdict = (report: PdfValidationReport) =>
    report.signatures.map((x) => ({ format: x.signatureFormat, indication: x.indication }));
  expect(
    verdict(validatePdfSignatures({ pdf: assembleXades(byId.get('xml')!, 'sig-1', leaf.raw), ...trust })),
  ).toEqual([{ format: 'XAdES-BASELINE-B', indication: 'TOTAL_PASSED' }]);
  expect(
    verdict(
      validatePdfSignatures({ pdf: PDF.pdf.embed(assembleCms(byId.get('pdf')!, certificatesDer)), ...trust }),
    ),
  ).toEqual([{ format: 'PAdES-BASELINE-B', indication: 'TOTAL_PASSED' }]);
  expect(
    verdict(
      validatePdfSignatures({
        pdf: assembleCms(byId.get('cms')!, certificatesDer),
        detachedContent: CONTENT,
        ...trust,
      }),
    ),
  ).toEqual([{ format: 'CAdES-BASELINE-B', indication: 'TOTAL_PASSED' }]);
}

/** A form posted to the door as a browser would, and the page it answers. */
async function post(path: string, fields: Record<string, string>): Promise<{ status: number; html: string }> {
  const res = await fetch(`${door().url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, html: await res.text() };
}

/** The hidden fields of an auto-posting page, and where it posts. */
function autoPost(html: string): { action: string; fields: Record<string, string> } {
  const unescape = (v: string) => v.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));
  const action = unescape(/<form method="post" action="([^"]*)"/.exec(html)?.[1] ?? '');
  const fields = Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [
      unescape(m[1]!),
      unescape(m[2]!),
    ]),
  );
  return { action, fields };
}

function responseOf(html: string): Document {
  const { action, fields } = autoPost(html);
  expect(action).toBe(returnUrl);
  const xml = Buffer.from(fields.EidSignResponse ?? '', 'base64').toString('utf8');
  expect(responseSignatureVerifies(xml, door().serviceCertPem)).toBe(true);
  expect(validateXsd(xml)).toEqual({ valid: true, errors: '' });
  return new DOMParser().parseFromString(xml, 'text/xml') as unknown as Document;
}

const SIG_STATUS = 'http://id.elegnamnden.se/sig-status/1.0/';
const SIG_STATUS_11 = 'http://id.swedenconnect.se/sig-status/1.1/';

describe('refused before the login', () => {
  test('a SignRequest signed by a key the e-service did not register: an error page, nothing posted anywhere', async () => {
    const before = received.length;
    const { status, html } = await post('/sign', fieldsOf(eserviceRequest(), throwawayKeyPair('A stranger')));
    expect(status).toBe(400);
    expect(html).toContain('not signed by a registered key');
    expect(html).not.toContain('EidSignResponse');
    expect(received.length).toBe(before);
  });

  test('a return URL not registered: an error page, nothing posted anywhere', async () => {
    const { status, html } = await post(
      '/sign',
      fieldsOf(eserviceRequest({ returnUrl: 'http://127.0.0.1:9/elsewhere' })),
    );
    expect(status).toBe(400);
    expect(html).toContain('no return URL registered');
    expect(html).not.toContain('EidSignResponse');
  });

  test('an expired request: req-expired', async () => {
    const old = eserviceRequest({ requestTime: new Date(Date.now() - 10 * 60_000) });
    const { status, html } = await post('/sign', fieldsOf(old));
    expect(status).toBe(200);
    expect(statusOf(responseOf(html))).toEqual({
      major: 'RequesterError',
      minor: `${SIG_STATUS}req-expired`,
    });
  });

  test('a replayed request: the second post of the same SignRequest is refused', async () => {
    const fields = fieldsOf(eserviceRequest());
    const first = await post('/sign', fields);
    expect(autoPost(first.html).action).toBe(door().idp.ssoUrl);
    const again = await post('/sign', fields);
    const doc = responseOf(again.html);
    expect(statusOf(doc)).toEqual({ major: 'RequesterError' });
    expect(text(doc, DSS, 'ResultMessage')).toEqual(['the RequestID was used before']);
  });
});

describe('refused after the login, in a signed SignResponse', () => {
  // Three arguments each: a fourth parameter would be taken for Jest's `done` callback.
  const cases: [
    string,
    { misbehave?: Misbehaviour; action?: 'cancel'; change?: Partial<EServiceRequest> },
    { major: string; minor?: string },
  ][] = [
    [
      'an assertion signed by a key the federation does not name',
      { misbehave: 'assertion-unknown-key' },
      { major: 'ResponderError', minor: `${SIG_STATUS_11}authn-failed` },
    ],
    [
      'an unsigned assertion',
      { misbehave: 'assertion-unsigned' },
      { major: 'ResponderError', minor: `${SIG_STATUS_11}authn-failed` },
    ],
    [
      'a response to another AuthnRequest (InResponseTo)',
      { misbehave: 'wrong-in-response-to' },
      { major: 'ResponderError', minor: `${SIG_STATUS_11}authn-failed` },
    ],
    [
      'an assertion for another person than the Signer',
      { misbehave: 'other-citizen' },
      { major: 'ResponderError', minor: `${SIG_STATUS}user-mismatch` },
    ],
    [
      'no signMessageDigest though the message must be shown',
      { misbehave: 'omit-sign-message-digest' },
      { major: 'ResponderError', minor: `${SIG_STATUS}sigmessage-error` },
    ],
    [
      'a signMessageDigest of another message',
      { misbehave: 'wrong-sign-message-digest' },
      { major: 'ResponderError', minor: `${SIG_STATUS}sigmessage-error` },
    ],
    [
      'the citizen cancels',
      { action: 'cancel' },
      { major: 'ResponderError', minor: `${SIG_STATUS}user-cancel` },
    ],
    [
      'a SAD for another number of documents (QC/SSCD)',
      { misbehave: 'sad-bad-docs', change: { certType: 'QC/SSCD' } },
      { major: 'ResponderError', minor: `${SIG_STATUS_11}authn-failed` },
    ],
  ];
  test.each(cases)('%s', async (_name, options, expected) => {
    const doc = await journey(eserviceRequest(options.change), options);
    expect(statusOf(doc)).toEqual(expected);
    expect(text(doc, CSIG, 'X509Certificate')).toEqual([]);
  });

  test('a qualified request (QC/SSCD) with a good SAD is signed', async () => {
    const doc = await journey(eserviceRequest({ certType: 'QC/SSCD' }));
    expect(statusOf(doc)).toEqual({ major: 'Success' });
  });
});

test('the demo page signs a PDF with the Swedish protocol: the citizen approves its text at the SAML IdP; EU DSS passes the download', async () => {
  const file = join(LOCAL_DIR, `dss-demo-${process.pid}.pdf`);
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  try {
    await page.goto(`${demo.url}/`, { waitUntil: 'load' });
    const input = (await page.$('#dss-document')) as ElementHandle<HTMLInputElement>;
    writeFileSync(file, minimalPdf('Lease of flat 12'));
    await input.uploadFile(file);
    await page.$eval(
      '#dss-message',
      (e) => ((e as HTMLTextAreaElement).value = 'I sign the lease of flat 12.'),
    );
    await page.click('#dss-sign');
    await page.waitForSelector('#dss-continue, [role="alert"]', { timeout: 60_000 });
    if (!(await page.$('#dss-continue'))) throw new Error(`the demo refused: ${await page.content()}`);
    await page.click('#dss-continue');
    await page.waitForSelector('#approve', { timeout: 60_000 });
    expect(await page.content()).toContain('I sign the lease of flat 12.');
    await page.click('#approve');
    await page.waitForSelector('#dss-signed, #dss-refused', { timeout: 90_000 });
    expect(await page.$eval('#dss-signed', (e) => e.textContent)).toContain(CITIZEN.personalIdentityNumber);
    const href = await page.$eval('#dss-download', (e) => (e as HTMLAnchorElement).href);
    const pdf = Buffer.from(await (await fetch(href)).arrayBuffer());
    const report = validatePdfSignatures({
      pdf,
      trustedRootsPem: [readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8')],
    });
    // A B-B signature (DSS-Ext returns signature values; further levels are the e-service's to add).
    expect(report.signatures.map((x) => [x.signatureFormat, x.indication])).toEqual([
      ['PAdES-BASELINE-B', 'TOTAL_PASSED'],
    ]);
  } finally {
    await context.close();
    rmSync(file, { force: true });
  }
});

test("the identity provider's Response posted again: an error page, nothing signed or posted twice", async () => {
  expect(statusOf(await journey(eserviceRequest()))).toEqual({ major: 'Success' });
  const before = received.length;
  const again = await post('/saml/acs', Object.fromEntries(new URLSearchParams(lastAcsPost!)));
  expect(again.status).toBe(400);
  expect(again.html).toContain('no login waits for this answer');
  expect(received.length).toBe(before);
});

test("a table write of a login's state gets nothing signed, and nothing is posted to the e-service", async () => {
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
  const { DynamoDBDocumentClient, ScanCommand, UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: pipeline.env.AWS_ENDPOINT_URL_DYNAMODB,
      region: pipeline.env.AWS_REGION ?? 'eu-north-1',
    }),
  );
  const table = pipeline.env.DSSEXT_TABLE_NAME!;
  const flows = async () =>
    new Map(
      ((await doc.send(new ScanCommand({ TableName: table }))).Items ?? [])
        .filter((i) => String(i.pk).startsWith('FLOW#'))
        .map((i) => [String(i.pk), i]),
    );
  const known = await flows();
  // Two logins begin; the writer gives the first one the second one's (sealed) state.
  const first = autoPost((await post('/sign', fieldsOf(eserviceRequest()))).html);
  const second = autoPost(
    (
      await post(
        '/sign',
        fieldsOf(
          eserviceRequest({ signer: [{ name: PNR, value: TEST_CITIZENS[1]!.personalIdentityNumber }] }),
        ),
      )
    ).html,
  );
  const fresh = [...(await flows()).values()].filter((i) => !known.has(String(i.pk)));
  expect(fresh).toHaveLength(2);
  for (const [target, source] of [
    [fresh[0]!, fresh[1]!],
    [fresh[1]!, fresh[0]!],
  ]) {
    await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: { pk: target.pk },
        UpdateExpression: 'SET flow = :f',
        ExpressionAttributeValues: { ':f': source.flow },
      }),
    );
  }
  const before = received.length;
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  try {
    await page.setContent(formPage(first.action, first.fields));
    await page.waitForSelector('#approve');
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('#approve')]);
    // The door's answer: an error page, not a SignResponse.
    await page.waitForSelector('#error', { timeout: 30_000 });
    expect(await page.$eval('#error', (e) => e.textContent)).toContain('no login waits for this answer');
  } finally {
    await context.close();
  }
  expect(received.length).toBe(before);
  expect(second.fields.RelayState).not.toBe(first.fields.RelayState);
});
