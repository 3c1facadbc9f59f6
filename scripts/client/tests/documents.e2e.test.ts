/**
 * Several documents under one login, end to end: three PDFs and a text file, one sign request, one login
 * at the local OpenID Provider in a real browser (Debian's Chromium through puppeteer-core), whose
 * signature page lists the four names. Each result is validated offline by the EU DSS validator at its
 * level (PAdES-BASELINE-LT in the PDFs, CAdES-BASELINE-LT beside the text file), the four name one
 * certificate, and that certificate's Authentication Context extension (RFC 7773), read with openssl
 * asn1parse and python3's XML parser, states the login's issuer, instant, level and attribute mappings.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import type { Browser } from 'puppeteer-core';
import { launchChromium } from '../../local/verify/chromium';
import { localIssuer } from '../../local/client';
import { IDP_CLIENT_KEYS_DIR, localClientKey } from '../../local/client-keys';
import { TEST_CITIZENS } from '../../local/idp/citizens';
import { CLIENT_IDS } from '../../local/idp/clients';
import { LOCAL_DIR } from '../../local/paths';
import { startLocalPipeline, type LocalPipeline } from '../../local/runner/pipeline';
import { parseSamlAuthContext, readAuthContextExtension } from '../../local/verify/auth-context';
import { runOpenssl } from '../../local/verify/openssl';
import { ensurePdfValidator, minimalPdf, validatePdfSignatures } from '../../local/verify/pdf-validator';
import { beginLogin, completeLogin } from '../src/oidc-login';
import { completeSigningDocuments, prepareSigningDocuments } from '../src/sign-document';
import { SigningClient } from '../src/signing-client';

jest.setTimeout(300_000);

const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
const citizen = TEST_CITIZENS[0];
const SACI = 'http://id.elegnamnden.se/auth-cont/1.0/saci';

let pipeline: LocalPipeline;
let browser: Browser;
/** Where the provider sends the browser back: answers 200 and remembers the URL. */
let callbackServer: Server;
let callbackUrl: string;
const callbacks: URL[] = [];

beforeAll(async () => {
  ensurePdfValidator();
  pipeline = await startLocalPipeline({
    resourcePrefix: `docs-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: { PORT: '0', POOL_TARGETS: 'EC-P256=4', LOCAL_KEYGEN_INTERVAL_SECONDS: '3600', LOG_LEVEL: 'WARN' },
  });
  await pipeline.runKeygen();
  callbackServer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', callbackUrl);
    if (url.pathname === '/callback') callbacks.push(url);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('back at the e-service');
  });
  await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', () => resolve()));
  callbackUrl = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  callbackServer?.closeAllConnections();
  await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()));
  await pipeline?.stop();
});

const sha256Hex = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');
/** xs:dateTime as the extension writes it: UTC, whole seconds. */
const instant = (seconds: number): string => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

test('three PDFs and a text file under ONE login: the provider lists the four names, DSS passes each at its level, one certificate whose AuthContext states the login', async () => {
  const files = [
    { name: 'application.pdf', document: minimalPdf('Building permit application'), pdf: true },
    { name: 'site-plan.pdf', document: minimalPdf('Site plan, parcel 7:12'), pdf: true },
    { name: 'neighbour-consent.pdf', document: minimalPdf('Consent of the neighbours'), pdf: true },
    { name: 'notes.txt', document: Buffer.from('Notes to the building committee.\n', 'utf8'), pdf: false },
  ];
  const client = new SigningClient({ apiUrl: pipeline.url, apiKey: pipeline.apiKey });
  const prepared = await prepareSigningDocuments({
    documents: files,
    signMessage: { text: 'I apply for a building permit.' },
  });
  const pending = await beginLogin({
    issuer: localIssuer(),
    clientId: CLIENT_IDS.signingService,
    redirectUri: callbackUrl,
    nonce: prepared.nonce,
    signature: {
      key: localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR),
      tbsData: prepared.login.tbsData,
      signMessage: prepared.login.signMessage!,
    },
  });

  // ONE login in the browser: the login form, then the signature page with the list, then back.
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  try {
    await page.goto(pending.authorizationUrl.href, { waitUntil: 'load' });
    await page.type('#login', citizen.personalIdentityNumber);
    await Promise.all([
      page.waitForNavigation({ waitUntil: 'load' }),
      page.click('form[action$="/login"] button'),
    ]);
    expect(await page.$eval('h1', (h) => h.textContent)).toBe('Sign');
    const shown = await page.$eval('#sign-message', (e) => (e as unknown as { innerText: string }).innerText);
    expect(shown).toContain('I apply for a building permit.');
    expect(shown).toContain('Documents (4):');
    for (const [i, file] of files.entries()) expect(shown).toContain(`${i + 1}. ${file.name}`);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#approve')]);
  } finally {
    await context.close();
  }
  expect(callbacks).toHaveLength(1);
  const { idToken } = await completeLogin(pending, callbacks[0]);
  const signed = await completeSigningDocuments(client, prepared, idToken);
  expect(signed.outputs.map((o) => o.name)).toEqual(files.map((f) => f.name));

  // Each result, offline in DSS, at its level, and the certificate each names.
  const signerCertificates = signed.outputs.map((output, i) => {
    const report = validatePdfSignatures({
      pdf: output.output,
      trustedRootsPem: [rootPem],
      ...(files[i].pdf ? {} : { detachedContent: files[i].document }),
    });
    expect(report.signatures).toHaveLength(1);
    expect(report.signatures[0]).toMatchObject({
      indication: 'TOTAL_PASSED',
      signatureFormat: files[i].pdf ? 'PAdES-BASELINE-LT' : 'CAdES-BASELINE-LT',
      chainTrusted: true,
    });
    expect(output.level).toBe('B-LT');
    return report.signatures[0].signerCertificate?.sha256;
  });
  // One certificate for the four: the one the result returns, its serial the result's.
  const leafPem = signed.result.certificate!;
  const leaf = new X509Certificate(leafPem);
  expect(new Set(signerCertificates)).toEqual(new Set([sha256Hex(leaf.raw)]));
  const serial = runOpenssl(['x509', '-in', 'c.pem', '-noout', '-serial'], { 'c.pem': leafPem }).stdout;
  expect(serial.trim().toLowerCase()).toBe(`serial=${signed.result.certificateSerial!.toLowerCase()}`);

  // Its Authentication Context: the login's issuer, instant, level and attributes.
  const claims = decodeJwt(idToken);
  const extension = readAuthContextExtension(leafPem);
  expect(extension?.contexts).toHaveLength(1);
  const context2 = parseSamlAuthContext(extension!.contexts[0].contextInfo!);
  expect(context2.root).toBe(`{${SACI}}SAMLAuthContext`);
  expect(context2.authContextInfo).toEqual({
    IdentityProvider: claims.iss,
    AuthenticationInstant: instant(claims.auth_time as number),
    AuthnContextClassRef: claims.acr,
    AssertionRef: sha256Hex(idToken),
    ServiceID: claims.aud,
  });
  expect(context2.mappings.map((m) => [m.ref, m.friendlyName, m.values])).toEqual([
    ['2.5.4.4', 'sn', [citizen.familyName]],
    ['2.5.4.42', 'givenName', [citizen.givenName]],
    ['2.5.4.5', 'personalIdentityNumber', [citizen.personalIdentityNumber]],
    ['2.5.4.3', 'displayName', [citizen.name]],
  ]);
});
