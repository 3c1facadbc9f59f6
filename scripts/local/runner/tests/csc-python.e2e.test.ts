/**
 * The CSC API v2 proven from outside: a client that shares no code with the service
 * (scripts/local/csc-client/csc_client.py, written from the CSC specification with Python's standard
 * library and pyHanko from PyPI) against the running local pipeline. It authorizes with PKCE (for the
 * PDF through oauth2/pushed_authorize, RFC 9126), the test citizen logs in and approves at the local IdP
 * in a real browser (headless Chromium, Debian's `chromium` driven by puppeteer-core, as the demo page's
 * test does), which follows the redirects to the client's loopback redirect URI where the client, listening,
 * receives the code (RFC 8252); it redeems the code with its secret, then:
 *
 * - signDoc, PAdES at AdES-B-LT, for the digest of a PDF's byte ranges that pyHanko prepared; it embeds
 *   the CMS and writes the validationInfo into the PDF's DSS; EU DSS validates the PDF offline as
 *   PAdES-BASELINE-LT (TOTAL_PASSED), and a changed byte fails;
 * - signHash of a file's SHA-256, verified by `openssl pkeyutl -verify` under the certificate the CA
 *   issued for the citizen.
 */
import { spawn } from 'node:child_process';
import { X509Certificate, createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { TABLES } from '@pipeline/resources';
import type { Browser, Page } from 'puppeteer-core';
import { launchChromium } from '../../verify/chromium';
import { TEST_CITIZENS } from '../../idp/citizens';
import { LOCAL_DIR, ROOT } from '../../paths';
import { opensslVerifyDigest } from '../../verify/openssl';
import {
  ensurePdfValidator,
  minimalPdf,
  PDF_VALIDATOR_DIR,
  validatePdfSignatures,
} from '../../verify/pdf-validator';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

jest.setTimeout(300_000);

const CLIENT = { clientId: 'python-csc', secret: randomBytes(24).toString('base64url') };
const CITIZEN = TEST_CITIZENS[0];
const PYTHON = join(PDF_VALIDATOR_DIR, 'pyhanko', 'venv', 'bin', 'python');
const SCRIPT = join(ROOT, 'scripts', 'local', 'csc-client', 'csc_client.py');

let pipeline: LocalPipeline;
let browser: Browser;
let dir: string;
/** The client's loopback redirect URI (a free port, registered for the client at the service). */
let redirect: string;
const rootPem = () => readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');

/**
 * A loopback port free now for the client to listen on, below Linux's ephemeral range (32768-60999) so
 * that the stand-ins, which take ports from that range, do not take it in between.
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise((resolve) => server.close(resolve));
      return port;
    }
  }
}

beforeAll(async () => {
  ensurePdfValidator();
  redirect = `http://127.0.0.1:${await freePort()}/python-csc-client/callback`;
  dir = mkdtempSync(join(tmpdir(), 'csc-python-'));
  pipeline = await startLocalPipeline({
    resourcePrefix: `cscpy-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      POOL_TARGETS: 'EC-P256=3',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      CSC_CLIENTS: JSON.stringify([
        {
          clientId: CLIENT.clientId,
          name: 'A Python CSC client',
          secretHash: createHash('sha256').update(CLIENT.secret).digest('hex'),
          redirectUris: [redirect],
        },
      ]),
    },
  });
  await pipeline.runKeygen();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await pipeline?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function clickAndWait(page: Page, selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation({ waitUntil: 'load', timeout: 60_000 }), page.click(selector)]);
}

/**
 * The citizen in the browser: opens the login URL the client printed, logs in and approves at the
 * local IdP's pages; the browser follows the service's callback to the client's redirect URI, where
 * the client answers.
 */
async function citizenApproves(loginUrl: string): Promise<void> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  // Every request of the journey, shown when it fails.
  const seen: string[] = [];
  page.on('request', (r) => seen.push(`${r.method()} ${r.url().slice(0, 90)}`));
  page.on('requestfailed', (r) => seen.push(`FAILED ${r.url().slice(0, 90)} ${r.failure()?.errorText}`));
  page.on('response', (r) => seen.push(`${r.status()} ${r.url().slice(0, 90)}`));
  try {
    await page.goto(loginUrl, { waitUntil: 'load' });
    expect(new URL(page.url()).origin).toBe(new URL(process.env.LOCAL_IDP_ISSUER!).origin);
    expect(await page.$eval('h1', (h) => h.textContent?.trim())).toBe('Log in to sign');
    await page.type('#login', CITIZEN.personalIdentityNumber);
    await clickAndWait(page, 'form[action$="/login"] button');
    expect(await page.content()).toContain(CITIZEN.personalIdentityNumber);
    await clickAndWait(page, '#approve');
    const at = new URL(page.url());
    expect(`${at.origin}${at.pathname}`).toBe(redirect);
    expect(at.searchParams.get('code')).toEqual(expect.any(String));
    expect(await page.content()).toContain('You may close this window.');
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${seen.join('\n')}`);
  } finally {
    await context.close();
  }
}

/**
 * Runs the Python client; the citizen logs in and approves in the browser when the client prints the
 * login URL; returns the client's result.
 */
async function runClient(args: string[]): Promise<Record<string, unknown>> {
  const child = spawn(
    PYTHON,
    [
      SCRIPT,
      ...args,
      '--base',
      pipeline.csc!.url,
      '--client-id',
      CLIENT.clientId,
      '--redirect-uri',
      redirect,
    ],
    { env: { ...process.env, CSC_CLIENT_SECRET: CLIENT.secret }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  let result: Record<string, unknown> | undefined;
  try {
    for await (const line of createInterface({ input: child.stdout })) {
      const message = JSON.parse(line) as { login?: string; result?: Record<string, unknown> };
      if (message.login) await citizenApproves(message.login);
      if (message.result) result = message.result;
    }
  } finally {
    if (child.exitCode === null) child.kill();
  }
  const code = await exited;
  if (code !== 0 || !result) throw new Error(`the Python client failed (${code}): ${stderr}`);
  return result;
}

/**
 * The certificate of the pipeline's sign request for this digest (the CA issued it for the citizen): the
 * request's own digest, or its one document's (a labelled hash is a `documents` request of one).
 */
async function certificateFor(digest: string): Promise<X509Certificate> {
  const doc = documentClient(loadAwsConfig(process.env));
  try {
    const out = await doc.send(
      new ScanCommand({
        TableName: pipeline.env[TABLES.requests.envVar],
        FilterExpression: 'begins_with(clientId, :csc)',
        ExpressionAttributeValues: { ':csc': 'csc:' },
        ConsistentRead: true,
      }),
    );
    const items = (out.Items ?? []).filter(
      (r) =>
        r.digest === digest ||
        (r.documents as { digest?: string }[] | undefined)?.some((d) => d.digest === digest),
    );
    expect(items).toHaveLength(1);
    expect(items[0].clientId).toBe(`csc:${CLIENT.clientId}`);
    return new X509Certificate(items[0].certificate as string);
  } finally {
    doc.destroy();
  }
}

/** EU DSS (default policy, offline) finds one signature, PAdES-BASELINE-LT, TOTAL_PASSED, without errors. */
function expectPadesLt(signed: Buffer): void {
  const report = validatePdfSignatures({ pdf: signed, trustedRootsPem: [rootPem()], policy: 'default' });
  expect(
    report.signatures.map((s) => ({
      format: s.signatureFormat,
      indication: s.indication,
      errors: s.errors.map((e) => e.key),
    })),
  ).toEqual([{ format: 'PAdES-BASELINE-LT', indication: 'TOTAL_PASSED', errors: [] }]);
}

test('a PDF signed through signDoc (PAdES, AdES-B-LT) by the Python client validates in EU DSS as PAdES-BASELINE-LT', async () => {
  const input = join(dir, 'application.pdf');
  const output = join(dir, 'application-signed.pdf');
  writeFileSync(input, minimalPdf(`Building permit ${randomBytes(4).toString('hex')}`));
  const result = await runClient(['pades', '--pdf', input, '--out', output]);
  expect(result.validationInfo).toMatchObject({
    certificates: expect.any(Number),
    ocsp: expect.any(Number),
  });
  const signed = readFileSync(output);
  expectPadesLt(signed);
  expect((await certificateFor(result.digest as string)).subject).toContain(
    `serialNumber=${CITIZEN.personalIdentityNumber}`,
  );
  // A byte of the signed content changed: DSS fails it.
  const tampered = Buffer.from(signed);
  const at = tampered.indexOf('Building permit');
  tampered[at] = 'b'.charCodeAt(0);
  const failed = validatePdfSignatures({ pdf: tampered, trustedRootsPem: [rootPem()], policy: 'default' });
  expect(failed.signatures[0].indication).toBe('TOTAL_FAILED');
});

test('a hash signed through signHash by the Python client verifies with openssl under the citizen certificate', async () => {
  const file = join(dir, 'notes.txt');
  const content = Buffer.from(`notes ${randomBytes(8).toString('hex')}\n`);
  writeFileSync(file, content);
  const result = await runClient(['signhash', '--file', file]);
  const digest = createHash('sha256').update(content).digest();
  expect(result.digest).toBe(digest.toString('base64'));
  const certificate = await certificateFor(result.digest as string);
  expect(certificate.subject).toContain(`serialNumber=${CITIZEN.personalIdentityNumber}`);
  const spki = certificate.publicKey.export({ type: 'spki', format: 'der' });
  const check = (d: Buffer) =>
    opensslVerifyDigest({
      publicKeySpki: spki,
      digest: d,
      signature: Buffer.from(result.signature as string, 'base64'),
      digestAlgorithm: 'SHA-256',
      signatureAlgorithm: 'ECDSA',
    });
  expect(check(digest)).toBe(true);
  expect(check(createHash('sha256').update('other').digest())).toBe(false);
});

test("pyHanko's own CSC signer signs a PDF with a one-time credential (certificate first, then the hashes' approval), which EU DSS validates as PAdES-BASELINE-LT", async () => {
  const input = join(dir, 'contract.pdf');
  const output = join(dir, 'contract-signed.pdf');
  writeFileSync(input, minimalPdf(`Lease contract ${randomBytes(4).toString('hex')}`));
  const result = await runClient([
    'cscsigner',
    '--pdf',
    input,
    '--out',
    output,
    '--tsa',
    `${new URL(pipeline.url).origin}/pki/tsa`,
    '--root',
    join(LOCAL_DIR, 'ca', 'root.pem'),
    // The local CA's certificates name the default port's URLs; this run serves its CRLs elsewhere.
    '--crl',
    `${new URL(pipeline.url).origin}/pki/root.crl`,
    '--crl',
    `${new URL(pipeline.url).origin}/pki/issuing.crl`,
  ]);
  expect(result.credentialID).toMatch(/^onetime-ec-p256\.[0-9a-f-]{36}$/);
  const signed = readFileSync(output);
  expectPadesLt(signed);
});
