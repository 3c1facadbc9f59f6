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
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DOMParser } from '@xmldom/xmldom';
import type { Browser, Page, PuppeteerNode } from 'puppeteer-core';
import {
  assembleCms,
  assembleXades,
  CMS_ATTRIBUTES,
  CMS_CONTENT,
  preparedPdf,
  SIGNED_INFO,
  type SignedTaskResult,
} from '../../../../lambdas/test-support/dss-tasks';
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
  validatePdfSignatures,
  type PdfValidationReport,
} from '../../verify/pdf-validator';
import { validateXsd } from '../../verify/xsd';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

jest.setTimeout(300_000);

const nodeModule = (
  process as unknown as { getBuiltinModule(id: 'node:module'): typeof import('node:module') }
).getBuiltinModule('node:module');
const puppeteer = nodeModule.createRequire(__filename)('puppeteer-core') as PuppeteerNode;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const CITIZEN = TEST_CITIZENS[0]!;
const PNR = 'urn:oid:1.2.752.29.4.13';
const MESSAGE = 'I sign the lease of flat 12, the lease as XML, the PDF and the CMS.';
const DSS = 'urn:oasis:names:tc:dss:1.0:core:schema';
const CSIG = 'http://id.elegnamnden.se/csig/1.1/dss-ext/ns';

let pipeline: LocalPipeline;
let browser: Browser;
let eservice: Server;
let returnUrl: string;
/** The SignResponses the e-service's return URL received (form fields), in order. */
const received: URLSearchParams[] = [];
let PDF: { pdf: PreparedPdf; attributes: Buffer };

beforeAll(async () => {
  ensurePdfValidator();
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: npm test installs it`);
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
  pipeline = await startLocalPipeline({
    resourcePrefix: `dssext-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      LOCAL_DSSEXT: '1',
      LOCAL_DSSEXT_RETURN_URLS: returnUrl,
      LOCAL_SAML_IDP_TEST_KNOBS: '1',
      POOL_TARGETS: 'EC-P256=12',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
    },
  });
  await pipeline.runKeygen();
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
});

afterAll(async () => {
  await browser?.close();
  await pipeline?.stop();
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

/** The citizen's journey: the form posted, the login page, approve (or cancel), the SignResponse. */
async function journey(
  request: EServiceRequest,
  options: { misbehave?: Misbehaviour; action?: 'approve' | 'cancel'; key?: EServiceKey } = {},
): Promise<Document> {
  if (options.misbehave) door().idp.misbehaveNext(options.misbehave);
  const before = received.length;
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
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
  const request = eserviceRequest();
  const doc = await journey(request);
  expect(statusOf(doc)).toEqual({ major: 'Success' });
  // One certificate, signer first, ending in the local root.
  const chain = text(doc, CSIG, 'X509Certificate').map(
    (b64) => new X509Certificate(Buffer.from(b64, 'base64')),
  );
  const root = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
  expect(chain.at(-1)!.fingerprint256).toBe(new X509Certificate(root).fingerprint256);
  const leaf = chain[0]!;
  expect(leaf.subject).toContain(`serialNumber=${CITIZEN.personalIdentityNumber}`);
  const context = parseSamlAuthContext(readAuthContextExtension(leaf.toString())!.contexts[0]!.contextInfo!);
  const [assertionRef] = text(doc, CSIG, 'AssertionRef');
  expect(context.authContextInfo).toMatchObject({
    IdentityProvider: door().idp.entityId,
    AssertionRef: assertionRef,
  });
  expect(text(doc, CSIG, 'IdentityProvider')).toEqual([door().idp.entityId]);
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
        detachedContent: CMS_CONTENT,
        ...trust,
      }),
    ),
  ).toEqual([{ format: 'CAdES-BASELINE-B', indication: 'TOTAL_PASSED' }]);
});
