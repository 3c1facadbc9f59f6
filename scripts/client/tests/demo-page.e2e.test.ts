/**
 * The demo e-service page in a real browser: headless Chromium (Debian's `chromium`, driven by
 * puppeteer-core) through the running local pipeline, with real redirects and cookies between the demo
 * page and the local OpenID Provider. A citizen chooses a PDF, writes the text to approve, logs in at
 * the provider, sees the text, the document's name and its fingerprint there, and signs: the signed PDF
 * downloads from the page and validates (EU DSS, independently here too), the request records the text's
 * hash and so does the CA's audit event. Or the citizen cancels at the provider: nothing is submitted,
 * signed or taken from the pool. Or the citizen chooses several PDFs: one login, the provider lists
 * them, and each signed PDF downloads and validates, all under one certificate.
 *
 * Every step is saved as a screenshot under .local/test-output/demo-page/<test>/ (kept after a failing
 * run, with one of the moment it failed). UPDATE_DOCS_SCREENSHOT=1 also writes the provider's signature
 * page to docs/signing-consent-page.png.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { Browser, Page } from 'puppeteer-core';
import { launchChromium } from '../../local/verify/chromium';
import { documentClient } from '@pipeline/adapters/aws';
import { AuditRepository } from '../../../lambdas/adapters/dynamodb/src/audit-repository';
import { loadAwsConfig } from '@pipeline/config';
import { eventsOf, type AuditEvent } from '@pipeline/core/audit';
import { signMessageHash } from '@pipeline/core/identity';
import { TABLES, tableName } from '@pipeline/resources';
import { call, localIssuer } from '../../local/client';
import { startLocalDemo } from '../../local/demo-eservice';
import { TEST_CITIZENS } from '../../local/idp/citizens';
import { LOCAL_DIR, ROOT } from '../../local/paths';
import { startLocalPipeline, type LocalPipeline } from '../../local/runner/pipeline';
import { ensurePdfValidator, minimalPdf, validatePdfSignatures } from '../../local/verify/pdf-validator';
import type { DemoService } from '../demo/server';

jest.setTimeout(300_000);

const OUTPUT = join(LOCAL_DIR, 'test-output', 'demo-page');
const DOCS_SCREENSHOT = join(ROOT, 'docs', 'signing-consent-page.png');
const citizen = TEST_CITIZENS[0];
const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');

let pipeline: LocalPipeline;
let demo: DemoService;
let browser: Browser;
let dir: string;

beforeAll(async () => {
  ensurePdfValidator();
  rmSync(OUTPUT, { recursive: true, force: true });
  dir = join(tmpdir(), `demo-page-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  pipeline = await startLocalPipeline({
    resourcePrefix: `demo-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      POOL_TARGETS: 'EC-P256=6',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      LOG_LEVEL: 'WARN',
    },
  });
  await pipeline.runKeygen();
  demo = await startLocalDemo({ apiUrl: pipeline.url, apiKey: pipeline.apiKey, issuer: localIssuer() });
  browser = await launchChromium({ defaultViewport: { width: 900, height: 1100 } });
});

afterAll(async () => {
  await browser?.close();
  await demo?.stop();
  await pipeline?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A page of its own (cookies included) per test, with a screenshot helper numbering the steps. */
async function journey<T>(
  name: string,
  steps: (page: Page, shot: (step: string) => Promise<void>) => Promise<T>,
): Promise<T> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  const out = join(OUTPUT, name);
  mkdirSync(out, { recursive: true });
  let n = 0;
  const shot = async (step: string): Promise<void> => {
    await page.screenshot({ path: join(out, `${String(++n).padStart(2, '0')}-${step}.png`), fullPage: true });
  };
  try {
    return await steps(page, shot);
  } catch (err) {
    await shot('failed').catch(() => undefined);
    throw err;
  } finally {
    await context.close();
  }
}

const text = (page: Page, selector: string): Promise<string> =>
  page.$eval(selector, (element) => (element as unknown as { innerText: string }).innerText.trim());

async function clickAndWait(page: Page, selector: string, timeout = 30_000): Promise<void> {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load', timeout }), page.click(selector)]);
}

/** The demo's first two pages: choose the PDF(s), write the text, review. Returns the fingerprint shown. */
async function chooseAndReview(
  page: Page,
  shot: (step: string) => Promise<void>,
  pdfFiles: string | string[],
  message: { text: string; markdown: boolean },
): Promise<string> {
  await page.goto(`${demo.url}/`, { waitUntil: 'load' });
  expect(await text(page, 'h1')).toBe('Sign a PDF');
  const input = await page.$('input[type=file]');
  await (input as unknown as { uploadFile(...paths: string[]): Promise<void> }).uploadFile(
    ...(Array.isArray(pdfFiles) ? pdfFiles : [pdfFiles]),
  );
  await page.click('#message', { count: 3 });
  await page.$eval('#message', (element) => ((element as unknown as { value: string }).value = ''));
  await page.type('#message', message.text);
  if (message.markdown) await page.click('input[name=mimeType][value="text/markdown"]');
  await shot('choose-document');
  await clickAndWait(page, '#continue');
  expect(await text(page, 'h1')).toBe('Review before signing');
  expect(await page.$eval('#sign-message', (element) => element.textContent)).toBe(message.text);
  await shot('review');
  return text(page, '#fingerprint');
}

/** The provider's login page, reached through the real redirect from the demo page. */
async function logIn(page: Page, shot: (step: string) => Promise<void>): Promise<void> {
  await clickAndWait(page, '#sign');
  expect(new URL(page.url()).origin).toBe(localIssuer());
  expect(await text(page, 'h1')).toBe('Log in to sign');
  await page.type('#login', citizen.personalIdentityNumber);
  await shot('identity-provider-login');
  await clickAndWait(page, 'form[action$="/login"] button');
  expect(await text(page, 'h1')).toBe('Sign');
}

/** Clicks a download link as a person does; the browser saves the file, which is returned. */
async function download(page: Page, selector: string, fileName: string): Promise<Buffer> {
  const into = join(dir, `downloads-${Date.now()}`);
  mkdirSync(into, { recursive: true });
  const cdp = await page.createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', {
    behavior: 'allow',
    downloadPath: into,
    browserContextId: page.browserContext().id,
  });
  await page.click(selector);
  const file = join(into, fileName);
  for (let waited = 0; !existsSync(file); waited += 100) {
    if (waited > 30_000) throw new Error(`the browser saved no ${fileName} within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return readFileSync(file);
}

async function poolAvailable(): Promise<Record<string, number>> {
  const health = await call<{ pool: Record<string, number> }>(`${pipeline.url}/health`, {
    apiKey: pipeline.apiKey,
  });
  return health.body.pool;
}

async function auditEvents(): Promise<AuditEvent[]> {
  const doc = documentClient(loadAwsConfig(process.env));
  return eventsOf(await new AuditRepository(doc, { tableName: tableName(TABLES.audit) }).readAll());
}

async function signRequestRecords(): Promise<number> {
  const doc = documentClient(loadAwsConfig(process.env));
  const out = await doc.send(new ScanCommand({ TableName: tableName(TABLES.requests), Select: 'COUNT' }));
  return out.Count ?? 0;
}

test('cancel at the identity provider: back on the demo page, nothing submitted, signed or taken from the pool', async () => {
  const pdfFile = join(dir, 'lease.pdf');
  writeFileSync(pdfFile, minimalPdf('Lease agreement'));
  // The pool after the fill, once it is still (each consumer may prefetch a key when it starts).
  let before = await poolAvailable();
  for (let settled = false; !settled;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const again = await poolAvailable();
    settled = JSON.stringify(again) === JSON.stringify(before);
    before = again;
  }
  const eventsBefore = (await auditEvents()).length;

  await journey('cancel', async (page, shot) => {
    await chooseAndReview(page, shot, pdfFile, { text: 'I accept the lease for flat 12.', markdown: false });
    await logIn(page, shot);
    expect(await text(page, '#sign-message')).toBe('I accept the lease for flat 12.');
    await shot('identity-provider-sign');
    await clickAndWait(page, 'form[action$="/cancel"] button');
    expect(`${new URL(page.url()).origin}${new URL(page.url()).pathname}`).toBe(`${demo.url}/result`);
    expect(await text(page, '#outcome')).toBe('You cancelled at the identity provider. Nothing was signed.');
    await shot('cancelled');
    // Nothing to download.
    expect((await page.goto(`${demo.url}/download`))?.status()).toBe(404);
  });

  expect(await signRequestRecords()).toBe(0);
  expect((await auditEvents()).length).toBe(eventsBefore);
  expect(await poolAvailable()).toEqual(before);
});

test('approve at the identity provider: the text, name and fingerprint shown there; a signed PDF that validates, with the text’s hash recorded', async () => {
  const pdfFile = join(dir, 'tax-return-2026.pdf');
  writeFileSync(pdfFile, minimalPdf('Tax return 2026'));
  const message = {
    text: '## Tax return 2026\n\nI declare that the information is **correct** and complete.\n\n- income: 412 300 SEK\n- deductions: 18 000 SEK',
    markdown: true,
  };
  const signed = await journey('approve', async (page, shot) => {
    const fingerprint = await chooseAndReview(page, shot, pdfFile, message);
    await logIn(page, shot);
    // The provider shows what the e-service sent, rendered: who signs, the document, its fingerprint.
    expect(await text(page, '#document-name')).toBe('tax-return-2026.pdf');
    expect(await text(page, '#fingerprint')).toBe(fingerprint);
    // The message's own heading sits below the page's (h1) and section's (h2).
    expect(await page.$eval('#sign-message h3', (h) => h.textContent)).toBe('Tax return 2026');
    expect(await page.$eval('#sign-message strong', (s) => s.textContent)).toBe('correct');
    expect(await page.$$eval('#sign-message li', (items) => items.map((i) => i.textContent))).toEqual([
      'income: 412 300 SEK',
      'deductions: 18 000 SEK',
    ]);
    expect(await page.content()).toContain(citizen.personalIdentityNumber);
    await shot('identity-provider-sign');
    if (process.env.UPDATE_DOCS_SCREENSHOT === '1') {
      await (await page.$('body'))!.screenshot({ path: DOCS_SCREENSHOT });
    }
    // Signing at the provider brings the browser back; the demo signs and validates before it answers.
    await clickAndWait(page, '#approve', 180_000);
    expect(new URL(page.url()).pathname).toBe('/result');
    expect(await text(page, '#outcome')).toBe('The document is signed.');
    expect(await text(page, '#signer')).toBe(citizen.name);
    expect(await text(page, '#validation')).toMatch(/^Every signature passed/);
    // The default level: time-stamped by the service's TSA, with the validation data in the PDF.
    expect(await text(page, '#level')).toBe('PAdES B-LT');
    expect(await page.content()).toContain('PAdES-BASELINE-LT');
    await shot('signed');
    return {
      pdf: await download(page, '#download', 'tax-return-2026-signed.pdf'),
      requestId: await text(page, '#request-id'),
      shownHash: await text(page, '#sign-message-hash'),
    };
  });

  // The download validates here too, on its own, and names the certificate the service issued.
  const report = validatePdfSignatures({ pdf: signed.pdf, trustedRootsPem: [rootPem] });
  expect(report.signatures).toHaveLength(1);
  expect(report.signatures[0]).toMatchObject({
    indication: 'TOTAL_PASSED',
    signatureFormat: 'PAdES-BASELINE-LT',
  });
  const view = await call<{ certificate: string; signMessageHash?: string; certificateSerial: string }>(
    `${pipeline.url}/sign-requests/${signed.requestId}`,
    { apiKey: pipeline.apiKey },
  );
  const leaf = new X509Certificate(view.body.certificate);
  expect(report.signatures[0].signerCertificate?.sha256).toBe(
    createHash('sha256').update(leaf.raw).digest('hex'),
  );
  expect(leaf.subject).toContain(`serialNumber=${citizen.personalIdentityNumber}`);
  // The text's hash, never the text: in the record and in the CA's audit event.
  const hash = signMessageHash({ text: message.text, mimeType: 'text/markdown' });
  expect(view.body.signMessageHash).toBe(hash);
  expect(signed.shownHash).toBe(hash);
  const issued = (await auditEvents()).find(
    (e) => e.type === 'certificate.issued' && e.requestId === signed.requestId,
  );
  expect(issued).toMatchObject({ serial: view.body.certificateSerial, signMessageHash: hash });
  expect(JSON.stringify(await auditEvents())).not.toContain('Tax return');
});

test('several PDFs under one login: the provider lists them, each signed PDF downloads and validates, all under one certificate', async () => {
  const names = ['lease.pdf', 'inventory.pdf', 'house-rules.pdf'];
  const files = names.map((name, i) => {
    const file = join(dir, name);
    writeFileSync(file, minimalPdf(`Document ${i + 1}: ${name}`));
    return file;
  });
  const message = { text: 'I sign the lease and its annexes.', markdown: false };
  const signed = await journey('several', async (page, shot) => {
    const fingerprint = await chooseAndReview(page, shot, files, message);
    expect(await page.$$eval('#documents li', (items) => items.map((i) => i.textContent))).toEqual(names);
    await logIn(page, shot);
    // One signature page for the three: the text and the numbered list, the list's fingerprint.
    const shown = await text(page, '#sign-message');
    expect(shown).toBe(
      `${message.text}\n\nDocuments (3):\n${names.map((name, i) => `${i + 1}. ${name}`).join('\n')}`,
    );
    expect(await text(page, '#fingerprint')).toBe(fingerprint);
    await shot('identity-provider-sign');
    await clickAndWait(page, '#approve', 240_000);
    expect(await text(page, '#outcome')).toBe(
      'The 3 documents are signed, under one login and one certificate.',
    );
    for (let n = 0; n < names.length; n++) {
      expect(await text(page, `#validation-${n}`)).toMatch(/^Every signature passed/);
      expect(await text(page, `#level-${n}`)).toBe('PAdES B-LT');
    }
    await shot('signed');
    const pdfs: Buffer[] = [];
    for (let n = 0; n < names.length; n++) {
      pdfs.push(await download(page, `#download-${n}`, names[n].replace(/\.pdf$/, '-signed.pdf')));
    }
    return { pdfs, requestId: await text(page, '#request-id') };
  });

  const view = await call<{ certificate: string; documents?: unknown[] }>(
    `${pipeline.url}/sign-requests/${signed.requestId}`,
    { apiKey: pipeline.apiKey },
  );
  expect(view.body.documents).toHaveLength(3);
  const leafHash = createHash('sha256').update(new X509Certificate(view.body.certificate).raw).digest('hex');
  for (const pdf of signed.pdfs) {
    const report = validatePdfSignatures({ pdf, trustedRootsPem: [rootPem] });
    expect(report.signatures).toHaveLength(1);
    expect(report.signatures[0]).toMatchObject({
      indication: 'TOTAL_PASSED',
      signatureFormat: 'PAdES-BASELINE-LT',
    });
    expect(report.signatures[0].signerCertificate?.sha256).toBe(leafHash);
  }
  // Three PDFs, not the same one three times.
  expect(new Set(signed.pdfs.map((pdf) => createHash('sha256').update(pdf).digest('hex'))).size).toBe(3);
});
