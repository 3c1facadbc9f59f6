/**
 * Our SP side against an identity provider nobody here wrote: Debian's SimpleSAMLphp, in headless
 * Chromium. The signed AuthnRequest (authnRequestForm) is posted to it, a citizen logs in on its form,
 * its Response is posted to our ACS, and readSamlResponse, verifySamlAssertion and xmlsec1 judge what
 * arrives; its metadata, wrapped in a federation signed by a test operator, is read by
 * readFederationMetadata. A request signed by a key it does not know is refused.
 */
import { createPrivateKey, randomBytes, sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { launchChromium } from '../../verify/chromium';
import {
  authnRequestForm,
  readFederationMetadata,
  readSamlResponse,
  spMetadataXml,
  verifySamlAssertion,
  type IdentityProviderEntry,
  type ServiceProvider,
} from '@pipeline/adapters/saml';
import { escapeXml, NS, parseXml } from '@pipeline/xml';
import {
  makeTestKey,
  signedFederationOf,
  testKeyDirectory,
  xmlsec1Verifies,
  type TestKey,
} from '../../../../lambdas/test-support/saml-evidence';
import { startSimpleSamlPhp, type SimpleSamlIdp } from '..';

jest.setTimeout(120_000);

const LOA3 = 'http://id.elegnamnden.se/loa/1.0/loa3';
const PNR = 'urn:oid:1.2.752.29.4.13';
const FRIDA = {
  username: 'frida',
  password: 'kranstege-1977',
  attributes: {
    [PNR]: '197705232382',
    'urn:oid:2.5.4.42': 'Frida',
    'urn:oid:2.5.4.4': 'Kranstege',
    'urn:oid:2.16.840.1.113730.3.1.241': 'Frida Kranstege',
  },
};
const ASSERTION_ID = 'ID:urn:oasis:names:tc:SAML:2.0:assertion:Assertion';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const SHA256 = 'http://www.w3.org/2001/04/xmlenc#sha256';
const URI_FORMAT = 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri';

/** The signature and digest methods and the attributes' NameFormats anywhere in a posted Response. */
function algorithmsOf(encoded: string): { signatures: string[]; digests: string[]; nameFormats: string[] } {
  const doc = parseXml(Buffer.from(encoded, 'base64').toString('utf8'));
  const all = (ns: string, name: string, attribute: string): string[] =>
    Array.from(doc.getElementsByTagNameNS(ns, name) as unknown as ArrayLike<Element>).map(
      (e) => e.getAttribute(attribute) ?? '',
    );
  return {
    signatures: all(NS.ds, 'SignatureMethod', 'Algorithm'),
    digests: all(NS.ds, 'DigestMethod', 'Algorithm'),
    nameFormats: all('urn:oasis:names:tc:SAML:2.0:assertion', 'Attribute', 'NameFormat'),
  };
}

const keys = testKeyDirectory();
let spKey: TestKey;
let stranger: TestKey;
let browser: Browser;
let idp: SimpleSamlIdp;
let federation: ReadonlyMap<string, IdentityProviderEntry>;
let idpCertFile: string;

/** The test's own web server: /start/<n> auto-posts a pending form, /acs records what is posted to it. */
let web: Server;
let base: string;
const pendingForms = new Map<string, { action: string; fields: Readonly<Record<string, string>> }>();
const posted: URLSearchParams[] = [];
let onPost: (() => void) | undefined;

function startWeb(): Promise<void> {
  web = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.startsWith('/start/')) {
      const form = pendingForms.get(req.url.slice('/start/'.length));
      if (form === undefined) return void res.writeHead(404).end();
      const inputs = Object.entries(form.fields)
        .map(([n, v]) => `<input type="hidden" name="${escapeXml(n)}" value="${escapeXml(v)}">`)
        .join('');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return void res.end(
        `<!doctype html><html><body><form method="post" action="${escapeXml(form.action)}">${inputs}</form>` +
          '<script>document.forms[0].submit()</script></body></html>',
      );
    }
    if (req.method === 'POST' && req.url === '/acs') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        posted.push(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
        onPost?.();
        res.writeHead(200, { 'content-type': 'text/plain' }).end('received');
      });
      return;
    }
    res.writeHead(404).end();
  });
  return new Promise((resolve) => web.listen(0, '127.0.0.1', resolve));
}

function serviceProvider(key: TestKey): ServiceProvider {
  return {
    entityId: `${base}/sp`,
    acsUrl: `${base}/acs`,
    signer: {
      signatureMethod: RSA_SHA256,
      certificates: [key.certificate.raw],
      sign: async (octets) => sign('sha256', octets, createPrivateKey(key.keyPem)),
    },
  };
}

beforeAll(async () => {
  spKey = makeTestKey(keys.dir, 'sp');
  stranger = makeTestKey(keys.dir, 'stranger');
  const operator = makeTestKey(keys.dir, 'operator');
  await startWeb();
  base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  const sp = serviceProvider(spKey);
  idp = await startSimpleSamlPhp({
    spMetadataXml: spMetadataXml({
      entityId: sp.entityId,
      acsUrl: sp.acsUrl,
      signingCertificateDer: spKey.certificate.raw,
    }),
    users: [FRIDA],
  });
  federation = readFederationMetadata(signedFederationOf(keys.dir, [idp.metadataXml], operator), [
    operator.certificate,
  ]);
  const entry = federation.get(idp.entityId)!;
  idpCertFile = join(keys.dir, 'simplesamlphp.crt');
  writeFileSync(
    idpCertFile,
    `-----BEGIN CERTIFICATE-----\n${entry.signingCertificates[0]!.raw.toString('base64')}\n-----END CERTIFICATE-----\n`,
  );
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await idp?.close();
  await new Promise((resolve) => web?.close(resolve));
  keys.remove();
});

/** Opens a page that auto-posts a fresh AuthnRequest (ForceAuthn, loa3) signed by `key`. */
async function sendAuthnRequest(page: Page, key: TestKey): Promise<{ id: string; sp: ServiceProvider }> {
  const id = `_${randomBytes(16).toString('hex')}`;
  const sp = serviceProvider(key);
  const form = await authnRequestForm(
    {
      id,
      issueInstant: new Date(),
      idp: federation.get(idp.entityId)!,
      loa: [LOA3],
      requesterId: `${base}/eservice`,
      relayState: `flow-${id}`,
    },
    sp,
  );
  pendingForms.set(id, form);
  await page.goto(`${base}/start/${id}`, { waitUntil: 'networkidle0' });
  return { id, sp };
}

/** Fills SimpleSAMLphp's login form and waits until its Response is posted to our ACS. */
async function logIn(page: Page): Promise<URLSearchParams> {
  const before = posted.length;
  const arrived = new Promise<void>((resolve) => {
    onPost = () => posted.length > before && resolve();
  });
  await page.type('#username', FRIDA.username);
  await page.type('#password', FRIDA.password);
  await Promise.all([page.waitForNavigation(), page.click('#submit_button')]);
  await arrived;
  return posted[posted.length - 1]!;
}

describe('SimpleSAMLphp as the identity provider', () => {
  it('publishes metadata our federation reader takes: HTTP-POST SSO, its signing key, loa3 certified', () => {
    const entry = federation.get(idp.entityId);
    expect(entry?.ssoPostUrl).toBe(idp.ssoUrl);
    expect(entry?.assuranceCertifications).toEqual([LOA3]);
    expect(entry?.signingCertificates).toHaveLength(1);
    expect(idp.ssoUrl.startsWith(`http://127.0.0.1:${idp.port}/`)).toBe(true);
  });

  it('logs the citizen in: a signed Response with a signed loa3 assertion our SP and xmlsec1 accept, and a fresh login on ForceAuthn', async () => {
    const page = await browser.newPage();
    try {
      for (const round of [1, 2]) {
        // The second round runs in the same browser session: ForceAuthn must show the login form again.
        const { id, sp } = await sendAuthnRequest(page, spKey);
        await page.waitForSelector('#username', { timeout: 15_000 });
        const loginStarted = Math.floor(Date.now() / 1000) * 1000;
        const answer = await logIn(page);
        expect(answer.get('RelayState')).toBe(`flow-${id}`);
        const response = readSamlResponse(answer.get('SAMLResponse') ?? '', {
          identityProviders: federation,
          expectedIssuer: idp.entityId,
          expectedInResponseTo: id,
          acsUrl: sp.acsUrl,
        });
        if (response.kind !== 'assertion') throw new Error(`round ${round}: refused (${response.reason})`);
        const facts = verifySamlAssertion(response.assertionXml, federation);
        expect(facts.issuer).toBe(idp.entityId);
        expect(facts.inResponseTo).toBe(id);
        expect(facts.recipient).toBe(sp.acsUrl);
        expect(facts.audiences).toEqual([sp.entityId]);
        expect(facts.authnContextClassRef).toBe(LOA3);
        expect(facts.authnInstant).toBeGreaterThanOrEqual(loginStarted);
        expect(facts.authnInstant).toBeLessThanOrEqual(Date.now());
        expect(facts.attributes).toEqual(
          expect.arrayContaining(
            Object.entries(FRIDA.attributes).map(([name, value]) => ({ name, values: [value] })),
          ),
        );
        expect(algorithmsOf(answer.get('SAMLResponse') ?? '')).toEqual({
          signatures: [RSA_SHA256, RSA_SHA256], // the Response's and the assertion's
          digests: [SHA256, SHA256],
          nameFormats: Object.keys(FRIDA.attributes).map(() => URI_FORMAT),
        });
        expect(xmlsec1Verifies(keys.dir, response.assertionXml, idpCertFile, ASSERTION_ID)).toBe(true);
        expect(
          xmlsec1Verifies(
            keys.dir,
            response.assertionXml.replace('197705232382', '197705232390'),
            idpCertFile,
            ASSERTION_ID,
          ),
        ).toBe(false);
        if (round === 1) await new Promise((r) => setTimeout(r, 1_100)); // AuthnInstant has whole seconds
      }
    } finally {
      await page.close();
    }
  });

  it('refuses an AuthnRequest signed by a key it does not know: no login form, nothing posted to the ACS', async () => {
    const page = await browser.newPage();
    try {
      const before = posted.length;
      const answers: number[] = [];
      page.on('response', (r) => {
        if (r.url() === idp.ssoUrl) answers.push(r.status());
      });
      await sendAuthnRequest(page, stranger);
      // SimpleSAMLphp 1.19 answers its error page with HTTP 200; the page names the cause (showerrors).
      await page.waitForFunction(
        () => document.body?.innerText.includes('Unable to validate Signature') === true,
        { timeout: 15_000 },
      );
      expect(answers).toEqual([200]);
      expect(await page.$('#username')).toBeNull();
      await new Promise((r) => setTimeout(r, 1_000));
      expect(posted).toHaveLength(before);
    } finally {
      await page.close();
    }
  });

  it('names the Debian packages to install when php is not there', async () => {
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await expect(startSimpleSamlPhp({ spMetadataXml: '', users: [] })).rejects.toThrow(
        /php-cli, php-xml, php-mbstring: apt-get install -y php-cli php-xml php-mbstring simplesamlphp/,
      );
    } finally {
      process.env.PATH = path;
    }
  });
});
