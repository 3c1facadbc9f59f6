/**
 * The demo e-service page (scripts/client/demo) wired to the local pipeline: the runner's API and API
 * key, the local OpenID Provider with the signing service's client and its signRequest key
 * (.local/idp/client-keys), and validation of the signed PDF by `npm run verify-pdf` (scripts/verify-pdf.ts,
 * the EU DSS validator trusting .local/ca/root.pem), run as a child process so the runner never blocks.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDemoService, type DemoService, type ValidationSummary } from '../client/demo/server';
import { SigningClient } from '../client/src/signing-client';
import type { SigV4Credentials } from '../client/src/sigv4';
import { IDP_CLIENT_KEYS_DIR, localClientKey } from './client-keys';
import { CLIENT_IDS } from './idp/clients';
import { demoDss } from './dss-eservice/demo';
import { ROOT } from './paths';
import type { LocalDssExt } from './runner/dss-ext';
import type { PdfValidationReport } from './verify/pdf-validator';

const VERIFY_PDF = join(ROOT, 'scripts', 'verify-pdf.ts');

/** Runs `npm run verify-pdf -- <file> --json` (its first run installs the validator) and summarises. */
export async function verifyPdfWithDss(pdf: Buffer): Promise<ValidationSummary> {
  const dir = await mkdtemp(join(tmpdir(), 'demo-verify-'));
  try {
    const file = join(dir, 'signed.pdf');
    await writeFile(file, pdf);
    const { code, stdout, stderr } = await new Promise<{
      code: number | null;
      stdout: string;
      stderr: string;
    }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', VERIFY_PDF, file, '--json'], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
      child.once('error', reject);
      child.once('close', (exit) => resolve({ code: exit, stdout: out, stderr: err }));
    });
    // Exit 0: every signature passed; 1: a signature did not pass (the report is printed all the same).
    if (code !== 0 && code !== 1) {
      return { passed: false, signatures: [], error: stderr.trim().split('\n').pop() ?? `exit ${code}` };
    }
    const report = JSON.parse(stdout) as PdfValidationReport;
    return {
      passed: code === 0,
      signatures: report.signatures.map((s) => ({
        indication: s.indication,
        ...(s.subIndication ? { subIndication: s.subIndication } : {}),
        ...(s.signatureFormat ? { format: s.signatureFormat } : {}),
        ...(s.signerCertificate?.subject
          ? {
              signer:
                /(?:^|,)CN=([^,]*)/.exec(s.signerCertificate.subject)?.[1] ?? s.signerCertificate.subject,
            }
          : {}),
        chainTrusted: s.chainTrusted === true,
        ...(s.signingTime ? { signingTime: s.signingTime } : {}),
      })),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function startLocalDemo(options: {
  readonly apiUrl: string;
  readonly apiKey: string;
  /** The client's own credentials, to sign its calls with (SigV4). */
  readonly credentials?: SigV4Credentials;
  /** The local OpenID Provider. */
  readonly issuer: string;
  /** 0: a free port. */
  readonly port?: number;
  /** The DSS-Ext door: the page's "sign with the Swedish protocol" path (its e-service's return URL is here). */
  readonly dssExt?: LocalDssExt;
  readonly log?: (line: string) => void;
}): Promise<DemoService> {
  return startDemoService({
    signing: new SigningClient({
      apiUrl: options.apiUrl,
      apiKey: options.apiKey,
      credentials: options.credentials,
    }),
    issuer: options.issuer,
    clientId: CLIENT_IDS.signingService,
    signRequestKey: localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR),
    port: options.port ?? 0,
    validate: verifyPdfWithDss,
    ...(options.dssExt ? { dss: demoDss(options.dssExt) } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
}
