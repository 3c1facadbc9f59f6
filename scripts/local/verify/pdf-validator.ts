/**
 * Test support: validation of signed PDFs by an independent validator, the EU DSS library (Digital
 * Signature Service 6.4, the European Commission's implementation of ETSI EN 319 102-1), installed from
 * Maven Central by scripts/local/validators/pdf/install.sh into .local/validators/pdf.
 *
 * The validator runs offline: the only trust anchors are the roots passed in, no AIA/CRL/OCSP is fetched.
 * By default it applies DSS's default policy with the revocation checks lowered to WARN ("b-b-offline"),
 * because a PAdES-BASELINE-B signature carries no revocation data; every signature also reports the
 * verdict of the unmodified default policy (`defaultPolicy`), which is INDETERMINATE /
 * CERTIFICATE_CHAIN_GENERAL_FAILURE for such a signature.
 *
 * Each validation starts a JVM (about 1 to 2 s on this machine with the class-data archive the installer
 * records); `wallMs` in the report says how long it took.
 *
 * Also here, for fixtures: signing with pyHanko (PyPI) or DSS, and a minimal one-page PDF.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_DIR, ROOT } from '../paths';
import { withTempDir } from './temp-dir';
import { runInstaller, ToolError } from './tool';

export const PDF_VALIDATOR_DIR = join(LOCAL_DIR, 'validators', 'pdf');
const INSTALL_SCRIPT = join(ROOT, 'scripts', 'local', 'validators', 'pdf', 'install.sh');
const DSS_COMMAND = join(PDF_VALIDATOR_DIR, 'bin', 'dss-pdf-validator');
const PYHANKO_COMMAND = join(PDF_VALIDATOR_DIR, 'bin', 'pyhanko');

/** A tool failed to run (not: a signature failed to validate, which is a normal report). */
export class PdfValidatorError extends ToolError {
  override readonly name = 'PdfValidatorError';
}

/** ETSI EN 319 102-1 main indications, as DSS reports them. */
export type Indication =
  'TOTAL_PASSED' | 'TOTAL_FAILED' | 'INDETERMINATE' | 'PASSED' | 'FAILED' | 'NO_SIGNATURE_FOUND';

export interface Conclusion {
  indication: Indication;
  /** e.g. HASH_FAILURE, SIG_CRYPTO_FAILURE, NO_CERTIFICATE_CHAIN_FOUND, TRY_LATER; null when passed. */
  subIndication: string | null;
}

export interface ReportMessage {
  /** DSS's message key, e.g. BBB_CV_IRDOI_ANS. */
  key: string;
  message: string;
}

export interface PdfCertificateInfo {
  subject: string;
  /** SHA-256 of the certificate's DER, lower-case hex. */
  sha256: string;
  trusted: boolean;
  selfSigned: boolean;
}

export interface PdfSignatureResult {
  /** DSS's identifier of the signature (S-…). */
  id: string;
  /** Final ETSI indication under the chosen policy. */
  indication: Indication;
  subIndication: string | null;
  /** e.g. PAdES-BASELINE-B, PAdES-BASELINE-T, PKCS7-B (not a PAdES baseline), CMS-NOT-ETSI. */
  signatureFormat: string | null;
  /** The signature value verifies over the signed attributes (DSS "signature intact"). */
  signatureIntact: boolean;
  /** Intact and every signed data reference (the PDF byte range digest) matches. */
  signatureValid: boolean;
  signedDataFound: boolean;
  /** The byte range digest matches the CMS message-digest attribute. */
  signedDataIntact: boolean;
  /** Conclusions of the basic building blocks; cryptographicVerification is DSS's "BBB crypto" result. */
  basicBuildingBlocks: {
    formatChecking: Conclusion | null;
    identificationOfSigningCertificate: Conclusion | null;
    validationContextInitialization: Conclusion | null;
    x509CertificateValidation: Conclusion | null;
    cryptographicVerification: Conclusion | null;
    signatureAcceptanceValidation: Conclusion | null;
    overall: Conclusion | null;
  };
  signerCertificate: {
    sha256: string;
    subject: string;
    issuer: string;
    serialNumber: string;
    notBefore: string;
    notAfter: string;
  } | null;
  /** From the signing certificate up to the trust anchor, as DSS built it. */
  certificateChain: PdfCertificateInfo[];
  /** Some certificate of the chain is one of the trusted roots given. */
  chainTrusted: boolean;
  /** ISO-8601; for PAdES the /M entry of the signature dictionary (no CMS signing-time attribute). */
  signingTime: string | null;
  claimedSigningTime: string | null;
  pdf?: {
    fieldNames: string[];
    filter: string | null;
    subFilter: string | null;
    byteRange: number[];
    byteRangeValid: boolean;
    modificationsDetected: boolean;
  };
  errors: ReportMessage[];
  warnings: ReportMessage[];
  infos: ReportMessage[];
  /** The same signature under DSS's unmodified default policy (which requires revocation data). */
  defaultPolicy: { indication: Indication; subIndication: string | null; errors: ReportMessage[] };
}

export interface PdfValidationReport {
  tool: string;
  policy: PdfValidationPolicy;
  policyDescription: string;
  validationTime: string;
  signaturesCount: number;
  validSignaturesCount: number;
  signatures: PdfSignatureResult[];
  /** setupMs/validationMs measured inside the JVM; wallMs is the whole call, JVM start included. */
  timing: { setupMs: number; validationMs: number; wallMs: number };
}

/**
 * b-b-offline (default): DSS's default policy with the signing-certificate and CA-certificate revocation
 * constraints lowered from FAIL to WARN. default: DSS's default policy unmodified.
 */
export type PdfValidationPolicy = 'b-b-offline' | 'default';

let installed = false;

/**
 * Installs the validator (and pyHanko) once per process if needed: runs install.sh, which returns at
 * once when everything is in place. Throws PdfValidatorError with the installer's messages otherwise.
 */
export function ensurePdfValidator(): { dssCommand: string; pyhankoCommand: string } {
  if (!installed) {
    runInstaller(INSTALL_SCRIPT, 'PDF validator', PdfValidatorError);
    installed = true;
  }
  return { dssCommand: DSS_COMMAND, pyhankoCommand: PYHANKO_COMMAND };
}

function runTool(command: string, args: string[], what: string, cwd: string): string {
  const run = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
    timeout: 5 * 60_000,
  });
  if (run.error || run.status !== 0) {
    throw new PdfValidatorError(
      `${what} failed (exit ${run.status ?? run.signal})${run.error ? `: ${run.error.message}` : ''}`,
      run.stderr ?? '',
      run.status,
    );
  }
  return run.stdout;
}

/**
 * Validates every signature of a PDF (or of a detached CAdES signature, with its content) with DSS,
 * trusting only the given roots. Synchronous.
 */
export function validatePdfSignatures(args: {
  pdf: Buffer;
  trustedRootsPem: string[];
  intermediatesPem?: string[];
  policy?: PdfValidationPolicy;
  /** Validate as at this time instead of now. */
  validationTime?: Date;
  /** `pdf` is a detached CAdES signature (.p7s) over this content. */
  detachedContent?: Buffer;
}): PdfValidationReport {
  if (args.trustedRootsPem.length === 0) throw new Error('validatePdfSignatures: at least one trusted root');
  const { dssCommand } = ensurePdfValidator();
  return withTempDir('pdf-validator', (dir) => {
    const params = ['validate', '--pdf', 'document.pdf', '--policy', args.policy ?? 'b-b-offline'];
    writeFileSync(join(dir, 'document.pdf'), args.pdf);
    args.trustedRootsPem.forEach((pem, i) => {
      writeFileSync(join(dir, `root-${i}.pem`), pem);
      params.push('--trusted', `root-${i}.pem`);
    });
    (args.intermediatesPem ?? []).forEach((pem, i) => {
      writeFileSync(join(dir, `intermediate-${i}.pem`), pem);
      params.push('--intermediates', `intermediate-${i}.pem`);
    });
    if (args.validationTime) params.push('--validation-time', args.validationTime.toISOString());
    if (args.detachedContent) {
      writeFileSync(join(dir, 'content.bin'), args.detachedContent);
      params.push('--detached', 'content.bin');
    }
    const started = process.hrtime.bigint();
    const stdout = runTool(dssCommand, params, 'DSS PDF validator', dir);
    const wallMs = Number((process.hrtime.bigint() - started) / 1_000_000n);
    let report: PdfValidationReport;
    try {
      report = JSON.parse(stdout) as PdfValidationReport;
    } catch {
      throw new PdfValidatorError('DSS PDF validator printed no JSON', stdout, 0);
    }
    report.timing = { ...report.timing, wallMs };
    return report;
  });
}

// --- fixtures ------------------------------------------------------------------------------------

/** Signs a PDF as PAdES-BASELINE-B with pyHanko (`pyhanko sign addsig --use-pades pemder`). */
export function signPdfWithPyHanko(args: {
  pdf: Buffer;
  keyPem: string;
  certPem: string;
  /** Certificates to embed besides the signer's (intermediates, root). */
  chainPem?: string[];
  fieldName?: string;
}): Buffer {
  const { pyhankoCommand } = ensurePdfValidator();
  return withTempDir('pdf-validator', (dir) => {
    writeFileSync(join(dir, 'in.pdf'), args.pdf);
    writeFileSync(join(dir, 'key.pem'), args.keyPem, { mode: 0o600 });
    writeFileSync(join(dir, 'cert.pem'), args.certPem);
    const params = ['sign', 'addsig', '--field', args.fieldName ?? 'Signature1', '--use-pades', 'pemder'];
    params.push('--key', 'key.pem', '--cert', 'cert.pem', '--no-pass');
    (args.chainPem ?? []).forEach((pem, i) => {
      writeFileSync(join(dir, `chain-${i}.pem`), pem);
      params.push('--chain', `chain-${i}.pem`);
    });
    params.push('in.pdf', 'out.pdf');
    runTool(pyhankoCommand, params, 'pyHanko signing', dir);
    return readFileSync(join(dir, 'out.pdf'));
  });
}

/** Signs a PDF as PAdES-BASELINE-B with DSS, with the first key of a PKCS#12 file. */
export function signPdfWithDss(args: { pdf: Buffer; pkcs12: Buffer; password: string }): Buffer {
  const { dssCommand } = ensurePdfValidator();
  return withTempDir('pdf-validator', (dir) => {
    writeFileSync(join(dir, 'in.pdf'), args.pdf);
    writeFileSync(join(dir, 'signer.p12'), args.pkcs12, { mode: 0o600 });
    const params = ['sign', '--pdf', 'in.pdf', '--out', 'out.pdf', '--p12', 'signer.p12'];
    params.push('--password', args.password);
    runTool(dssCommand, params, 'DSS signing', dir);
    return readFileSync(join(dir, 'out.pdf'));
  });
}

/** A small valid one-page PDF (classic cross-reference table) showing `text`. */
export function minimalPdf(text = 'Hello, PAdES'): Buffer {
  const escaped = text.replace(/[\\()]/g, (c) => `\\${c}`);
  const content = `BT /F1 18 Tf 40 100 Td (${escaped}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    `<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.7\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
