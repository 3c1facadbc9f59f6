/**
 * The CSC API v2 proven from outside: a client that shares no code with the service
 * (scripts/local/csc-client/csc_client.py, written from the CSC specification with Python's standard
 * library and pyHanko from PyPI) against the running local pipeline. It authorizes with PKCE (for the
 * PDF through oauth2/pushed_authorize, RFC 9126), the test citizen logs in at the local IdP in the user
 * agent (this test plays it, as the other e2e tests log in), it redeems the code with its secret, then:
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
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { TABLES } from '@pipeline/resources';
import { loginAtLocalIdp } from '../../../client/src/oidc-login';
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

const REDIRECT = 'http://127.0.0.1/python-csc-client/callback';
const CLIENT = { clientId: 'python-csc', secret: randomBytes(24).toString('base64url') };
const CITIZEN = TEST_CITIZENS[0];
const PYTHON = join(PDF_VALIDATOR_DIR, 'pyhanko', 'venv', 'bin', 'python');
const SCRIPT = join(ROOT, 'scripts', 'local', 'csc-client', 'csc_client.py');

let pipeline: LocalPipeline;
let dir: string;
const rootPem = () => readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');

beforeAll(async () => {
  ensurePdfValidator();
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
          redirectUris: [REDIRECT],
        },
      ]),
    },
  });
  await pipeline.runKeygen();
});

afterAll(async () => {
  await pipeline?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs the Python client; plays the citizen's user agent when it asks for the login (the IdP's page,
 * the sign approval); returns its result.
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
      REDIRECT,
    ],
    { env: { ...process.env, CSC_CLIENT_SECRET: CLIENT.secret }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  let result: Record<string, unknown> | undefined;
  for await (const line of createInterface({ input: child.stdout })) {
    const message = JSON.parse(line) as { login?: string; result?: Record<string, unknown> };
    if (message.login) {
      const atCallback = await loginAtLocalIdp(
        new URL(message.login),
        process.env.CSC_IDP_REDIRECT_URI!,
        CITIZEN.personalIdentityNumber,
        'sign',
      );
      child.stdin.write(`${atCallback}\n`);
    }
    if (message.result) result = message.result;
  }
  const code = await exited;
  if (code !== 0 || !result) throw new Error(`the Python client failed (${code}): ${stderr}`);
  return result;
}

/** The certificate of the pipeline's sign request for this digest (the CA issued it for the citizen). */
async function certificateFor(digest: string): Promise<X509Certificate> {
  const doc = documentClient(loadAwsConfig());
  try {
    const out = await doc.send(
      new ScanCommand({
        TableName: pipeline.env[TABLES.requests.envVar],
        FilterExpression: 'digest = :d',
        ExpressionAttributeValues: { ':d': digest },
        ConsistentRead: true,
      }),
    );
    expect(out.Items).toHaveLength(1);
    expect(out.Items![0].clientId).toBe(`csc:${CLIENT.clientId}`);
    return new X509Certificate(out.Items![0].certificate as string);
  } finally {
    doc.destroy();
  }
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
  const report = validatePdfSignatures({ pdf: signed, trustedRootsPem: [rootPem()], policy: 'default' });
  expect(
    report.signatures.map((s) => ({
      format: s.signatureFormat,
      indication: s.indication,
      errors: s.errors.map((e) => e.key),
    })),
  ).toEqual([{ format: 'PAdES-BASELINE-LT', indication: 'TOTAL_PASSED', errors: [] }]);
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
