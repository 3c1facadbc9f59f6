/**
 * The e-service client against the whole local pipeline: detached CAdES signatures that `openssl cms
 * -verify` accepts, PAdES signatures in PDFs that the EU DSS validator (an independent implementation,
 * installed from Maven Central by the test) judges TOTAL_PASSED / PAdES-BASELINE-LT with our root as the
 * only trust anchor, and the bad inputs a client must refuse before anyone logs in.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PDFDocument } from '@cantoo/pdf-lib';
import { opensslCmsVerify, opensslSigningCertificateV2Hash } from '../../local/verify/openssl';
import { ensurePdfValidator, validatePdfSignatures } from '../../local/verify/pdf-validator';
import { call, localIssuer } from '../../local/client';
import { TEST_CITIZENS } from '../../local/idp/citizens';
import { CLIENT_IDS } from '../../local/idp/clients';
import { LOCAL_DIR, ROOT } from '../../local/paths';
import { startLocalPipeline, type LocalPipeline } from '../../local/runner/pipeline';
import { obtainIdToken } from '../src/oidc-login';
import { PdfSignatureError } from '../src/pdf-signature';
import { signDocument } from '../src/sign-document';
import { SigningClient, type KeyType, type SignatureAlgorithm } from '../src/signing-client';

jest.setTimeout(180_000);

let pipeline: LocalPipeline;
let client: SigningClient;
let dir: string;
const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
const logins: string[] = [];

const login = async (nonce: string): Promise<string> => {
  logins.push(nonce);
  return (
    await obtainIdToken({
      issuer: localIssuer(),
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: TEST_CITIZENS[0].personalIdentityNumber,
      nonce,
    })
  ).idToken;
};

async function pdf(pages = 1): Promise<Buffer> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < pages; i++)
    doc.addPage([595, 842]).drawText(`Agreement, page ${i + 1}`, { x: 50, y: 780 });
  return Buffer.from(await doc.save());
}

beforeAll(async () => {
  ensurePdfValidator();
  dir = mkdtempSync(join(tmpdir(), 'sign-e2e-'));
  pipeline = await startLocalPipeline({
    resourcePrefix: `sign-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      POOL_TARGETS: 'EC-P256=20,RSA-2048=4',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      LOG_LEVEL: 'WARN',
      // As on AWS: every call is signed with the client's own credentials (SigV4).
      LOCAL_API_REQUIRE_SIGV4: '1',
    },
  });
  await pipeline.runKeygen();
  client = new SigningClient({
    apiUrl: pipeline.url,
    apiKey: pipeline.apiKey,
    credentials: pipeline.clients[0],
  });
});

afterAll(async () => {
  await pipeline?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test.each<[KeyType, SignatureAlgorithm | undefined]>([
  ['EC-P256', undefined],
  ['RSA-2048', 'RSASSA-PSS'],
  ['RSA-2048', 'RSASSA-PKCS1-v1_5'],
])(
  '%s %s: a detached .p7s that openssl cms -verify accepts, naming the certificate returned',
  async (keyType, scheme) => {
    const document = randomBytes(4000);
    const signed = await signDocument({ client, login, document, keyType, signatureAlgorithm: scheme });
    expect(opensslCmsVerify({ cms: signed.output, content: document, rootPem }).output).toContain(
      'Verification successful',
    );
    const leaf = new X509Certificate(signed.result.certificate!);
    expect(opensslSigningCertificateV2Hash(signed.output)).toBe(
      createHash('sha256').update(leaf.raw).digest('hex'),
    );
  },
);

test('a signed PDF validates in EU DSS as PAdES-BASELINE-LT (the default level), intact, with the issued certificate and a trusted chain', async () => {
  const original = await pdf(2);
  const signed = await signDocument({ client, login, document: original, pdf: true });
  // An incremental update: the original bytes are untouched at the start of the file.
  expect(signed.output.subarray(0, original.length).equals(original)).toBe(true);
  const report = validatePdfSignatures({ pdf: signed.output, trustedRootsPem: [rootPem] });
  expect(report.signatures).toHaveLength(1);
  const [signature] = report.signatures;
  expect(signature).toMatchObject({
    indication: 'TOTAL_PASSED',
    signatureFormat: 'PAdES-BASELINE-LT',
    signatureIntact: true,
    signedDataIntact: true,
    chainTrusted: true,
  });
  const leaf = new X509Certificate(signed.result.certificate!);
  expect(signature.signerCertificate?.sha256).toBe(createHash('sha256').update(leaf.raw).digest('hex'));

  // A changed byte inside the signed range: the digest no longer matches.
  const tampered = Buffer.from(signed.output);
  tampered[Math.floor(original.length / 2)] ^= 0x01;
  const broken = validatePdfSignatures({ pdf: tampered, trustedRootsPem: [rootPem] }).signatures[0];
  expect(broken.indication).not.toBe('TOTAL_PASSED');
  expect(broken.signedDataIntact).toBe(false);
});

test('a second signature on a signed PDF keeps the first one valid', async () => {
  const once = await signDocument({ client, login, document: await pdf(), pdf: true });
  const twice = await signDocument({ client, login, document: once.output, pdf: true });
  const report = validatePdfSignatures({ pdf: twice.output, trustedRootsPem: [rootPem] });
  expect(report.signatures.map((s) => [s.indication, s.signatureFormat])).toEqual([
    ['TOTAL_PASSED', 'PAdES-BASELINE-LT'],
    ['TOTAL_PASSED', 'PAdES-BASELINE-LT'],
  ]);
});

test('a file that is not a PDF, or an encrypted PDF, is refused before anyone logs in', async () => {
  const before = logins.length;
  const encrypted = await PDFDocument.create();
  encrypted.addPage().drawText('secret');
  encrypted.encrypt({ userPassword: 'user', ownerPassword: 'owner' });
  const cases: Array<[Buffer, string]> = [
    [Buffer.from('just text, no PDF'), 'NOT_A_PDF'],
    [Buffer.from(await encrypted.save()), 'PDF_ENCRYPTED'],
  ];
  for (const [document, code] of cases) {
    const error = await signDocument({ client, login, document, pdf: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PdfSignatureError);
    expect((error as PdfSignatureError).code).toBe(code);
  }
  expect(logins.length).toBe(before);
});

test('the API refuses a cms request with a digest of the wrong length or an unknown profile', async () => {
  for (const change of [{ digest: randomBytes(31).toString('base64') }, { profile: 'XAdES-B-B' }]) {
    const res = await call<{ error: { code: string } }>(`${pipeline.url}/sign-requests`, {
      apiKey: pipeline.apiKey,
      credentials: pipeline.clients[0],
      body: {
        requestId: SigningClient.newRequestId(),
        digest: randomBytes(32).toString('base64'),
        digestAlgorithm: 'SHA-256',
        format: 'cms',
        identityAssertion: 'a.b.c',
        ...change,
      },
    });
    expect([res.status, res.body.error.code]).toEqual([400, 'VALIDATION_FAILED']);
  }
});

test('npm run sign signs a PDF from the command line', async () => {
  const input = join(dir, 'in.pdf');
  const output = join(dir, 'out.pdf');
  writeFileSync(input, await pdf());
  const { stdout } = await promisify(execFile)(
    join(ROOT, 'node_modules', '.bin', 'tsx'),
    [join(ROOT, 'scripts', 'local', 'sign.ts'), input, '--pdf', '-o', output, '--citizen', '2'],
    {
      env: {
        ...process.env,
        SIGNING_API_URL: pipeline.url,
        SIGNING_API_KEY: pipeline.apiKey,
        SIGNING_ACCESS_KEY_ID: pipeline.clients[0].accessKeyId,
        SIGNING_SECRET_KEY: pipeline.clients[0].secretAccessKey,
      },
    },
  );
  expect(stdout).toContain('(PAdES, level B-LT)');
  expect(stdout).toContain(`serialNumber=${TEST_CITIZENS[2].personalIdentityNumber}`);
  const [signature] = validatePdfSignatures({
    pdf: readFileSync(output),
    trustedRootsPem: [rootPem],
  }).signatures;
  expect([signature.indication, signature.signatureFormat]).toEqual(['TOTAL_PASSED', 'PAdES-BASELINE-LT']);
});

test('npm run sign signs several files under one login: each PDF as PAdES, the text as CAdES, one certificate', async () => {
  const into = join(dir, 'several');
  mkdirSync(into);
  const files = [join(dir, 'contract.pdf'), join(dir, 'annex.pdf'), join(dir, 'notes.txt')];
  writeFileSync(files[0], await pdf());
  writeFileSync(files[1], await pdf(2));
  writeFileSync(files[2], 'notes to the contract\n');
  const { stdout } = await promisify(execFile)(
    join(ROOT, 'node_modules', '.bin', 'tsx'),
    [join(ROOT, 'scripts', 'local', 'sign.ts'), ...files, '-o', into, '--citizen', '1'],
    {
      env: {
        ...process.env,
        SIGNING_API_URL: pipeline.url,
        SIGNING_API_KEY: pipeline.apiKey,
        SIGNING_ACCESS_KEY_ID: pipeline.clients[0].accessKeyId,
        SIGNING_SECRET_KEY: pipeline.clients[0].secretAccessKey,
      },
    },
  );
  expect(stdout).toContain('one login');
  expect(stdout).toContain(`serialNumber=${TEST_CITIZENS[1].personalIdentityNumber}`);
  const reports = [
    validatePdfSignatures({
      pdf: readFileSync(join(into, 'contract-signed.pdf')),
      trustedRootsPem: [rootPem],
    }),
    validatePdfSignatures({ pdf: readFileSync(join(into, 'annex-signed.pdf')), trustedRootsPem: [rootPem] }),
    validatePdfSignatures({
      pdf: readFileSync(join(into, 'notes.txt.p7s')),
      detachedContent: readFileSync(files[2]),
      trustedRootsPem: [rootPem],
    }),
  ].map((r) => r.signatures[0]);
  expect(reports.map((s) => [s.indication, s.signatureFormat])).toEqual([
    ['TOTAL_PASSED', 'PAdES-BASELINE-LT'],
    ['TOTAL_PASSED', 'PAdES-BASELINE-LT'],
    ['TOTAL_PASSED', 'CAdES-BASELINE-LT'],
  ]);
  expect(new Set(reports.map((s) => s.signerCertificate?.sha256)).size).toBe(1);
});
