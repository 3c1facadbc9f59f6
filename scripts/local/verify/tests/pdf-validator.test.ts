/**
 * The independent PDF signature validator (EU DSS, installed from Maven Central) on fixtures made only with
 * tools unrelated to the service: certificates from the openssl command line, signatures from pyHanko
 * (PyPI) and from DSS's own signing service. Nothing binary is committed; everything is made here.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ensurePdfValidator,
  minimalPdf,
  PdfValidatorError,
  signPdfWithDss,
  signPdfWithPyHanko,
  validatePdfSignatures,
  type PdfValidationReport,
} from '../pdf-validator';

jest.setTimeout(120_000);

type KeyKind = 'P-256' | 'RSA-3072';

interface Issued {
  keyPem: string;
  certPem: string;
  /** SHA-256 of the DER certificate, as `openssl x509 -fingerprint -sha256` prints it (lower-case hex). */
  sha256: string;
}

let work: string;

function openssl(args: string[]): string {
  return execFileSync('openssl', args, { cwd: work, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function fingerprint(certFile: string): string {
  const out = openssl(['x509', '-in', certFile, '-noout', '-fingerprint', '-sha256']);
  return out.split('=')[1].trim().replace(/:/g, '').toLowerCase();
}

function genKey(name: string, kind: KeyKind): void {
  const opts =
    kind === 'P-256'
      ? ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']
      : ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:3072'];
  openssl(['genpkey', ...opts, '-out', `${name}.key`]);
}

function makeRoot(name: string, kind: KeyKind, cn: string): Issued {
  genKey(name, kind);
  openssl([
    'req',
    '-new',
    '-x509',
    '-key',
    `${name}.key`,
    '-subj',
    `/CN=${cn}/O=PDF validator test`,
    '-days',
    '30',
    '-sha256',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-addext',
    'subjectKeyIdentifier=hash',
    '-out',
    `${name}.pem`,
  ]);
  return read(name);
}

function issue(name: string, kind: KeyKind, cn: string, issuer: string, ca: boolean): Issued {
  genKey(name, kind);
  openssl([
    'req',
    '-new',
    '-key',
    `${name}.key`,
    '-subj',
    `/CN=${cn}/O=PDF validator test`,
    '-out',
    `${name}.csr`,
  ]);
  const ext = ca
    ? 'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n'
    : 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\n';
  writeFileSync(
    join(work, `${name}.ext`),
    `${ext}subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid:always\n`,
  );
  openssl([
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${issuer}.pem`,
    '-CAkey',
    `${issuer}.key`,
    '-set_serial',
    `0x${Date.now().toString(16)}${Math.floor(Math.random() * 1e6).toString(16)}`,
    '-days',
    '10',
    '-sha256',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  ]);
  return read(name);
}

function read(name: string): Issued {
  return {
    keyPem: readFileSync(join(work, `${name}.key`), 'utf8'),
    certPem: readFileSync(join(work, `${name}.pem`), 'utf8'),
    sha256: fingerprint(`${name}.pem`),
  };
}

/** The /ByteRange [a b c d] of the (only) signature of a PDF. */
function byteRange(pdf: Buffer): [number, number, number, number] {
  const m = /\/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]/.exec(pdf.toString('latin1'));
  if (!m) throw new Error('no /ByteRange in the signed PDF');
  return [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])];
}

function only(report: PdfValidationReport) {
  expect(report.signaturesCount).toBe(1);
  expect(report.signatures).toHaveLength(1);
  return report.signatures[0];
}

function logTiming(what: string, report: PdfValidationReport): void {
  const t = report.timing;
  console.log(
    `[pdf-validator] ${what}: ${t.wallMs} ms wall (JVM set-up ${t.setupMs} ms, DSS ${t.validationMs} ms)`,
  );
}

let root: Issued;
let otherRoot: Issued;
let ecSigner: Issued;
let rsaRoot: Issued;
let rsaIntermediate: Issued;
let rsaSigner: Issued;
let ecSignedByPyHanko: Buffer;

beforeAll(() => {
  // Installs DSS and pyHanko on a fresh .local (about 20 s with warm caches), else returns at once.
  ensurePdfValidator();
  work = mkdtempSync(join(tmpdir(), 'pdf-validator-test-'));
  root = makeRoot('root', 'P-256', 'Test Root P-256');
  otherRoot = makeRoot('other-root', 'P-256', 'Unrelated Root');
  ecSigner = issue('ec-signer', 'P-256', 'Signer P-256', 'root', false);
  rsaRoot = makeRoot('rsa-root', 'RSA-3072', 'Test Root RSA');
  rsaIntermediate = issue('rsa-intermediate', 'RSA-3072', 'Test Intermediate RSA', 'rsa-root', true);
  rsaSigner = issue('rsa-signer', 'RSA-3072', 'Signer RSA', 'rsa-intermediate', false);
  ecSignedByPyHanko = signPdfWithPyHanko({
    pdf: minimalPdf('Signed by pyHanko with P-256'),
    keyPem: ecSigner.keyPem,
    certPem: ecSigner.certPem,
    chainPem: [root.certPem],
  });
}, 15 * 60_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('DSS validation of PAdES-BASELINE-B PDFs', () => {
  it('passes a pyHanko P-256 signature with the right root trusted, and names the format and signer', () => {
    const report = validatePdfSignatures({ pdf: ecSignedByPyHanko, trustedRootsPem: [root.certPem] });
    logTiming('pyHanko P-256, trusted root', report);
    expect(report.policy).toBe('b-b-offline');
    const sig = only(report);
    expect(sig.indication).toBe('TOTAL_PASSED');
    expect(sig.subIndication).toBeNull();
    expect(sig.signatureFormat).toBe('PAdES-BASELINE-B');
    expect(sig.signatureIntact).toBe(true);
    expect(sig.signatureValid).toBe(true);
    expect(sig.signedDataIntact).toBe(true);
    expect(sig.basicBuildingBlocks.cryptographicVerification?.indication).toBe('PASSED');
    expect(sig.basicBuildingBlocks.x509CertificateValidation?.indication).toBe('PASSED');
    expect(sig.signerCertificate?.sha256).toBe(ecSigner.sha256);
    expect(sig.signerCertificate?.subject).toContain('CN=Signer P-256');
    expect(sig.chainTrusted).toBe(true);
    expect(sig.certificateChain.map((c) => c.sha256)).toEqual([ecSigner.sha256, root.sha256]);
    expect(sig.certificateChain[1].trusted).toBe(true);
    expect(sig.signingTime).not.toBeNull();
    expect(sig.pdf?.subFilter).toBe('ETSI.CAdES.detached');
    expect(sig.pdf?.byteRangeValid).toBe(true);
    expect(sig.errors).toEqual([]);
    // What DSS's unmodified policy says about a B-B signature without revocation data: not a failure of
    // the signature, an undecided chain (the reason this validator lowers those checks to warnings).
    expect(sig.defaultPolicy.indication).toBe('INDETERMINATE');
    expect(sig.warnings.map((w) => w.key)).toContain('BBB_XCV_IRDPFC_ANS');
  });

  it('passes a DSS-signed RSA-3072 signature whose intermediate CA is given apart, not embedded', () => {
    const pkcs12 = execFileSync(
      'openssl',
      ['pkcs12', '-export', '-inkey', 'rsa-signer.key', '-in', 'rsa-signer.pem', '-passout', 'pass:fixture'],
      { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const pdf = signPdfWithDss({ pdf: minimalPdf('Signed by DSS with RSA'), pkcs12, password: 'fixture' });
    const withIntermediate = validatePdfSignatures({
      pdf,
      trustedRootsPem: [rsaRoot.certPem],
      intermediatesPem: [rsaIntermediate.certPem],
    });
    logTiming('DSS RSA-3072, intermediate given', withIntermediate);
    const sig = only(withIntermediate);
    expect(sig.indication).toBe('TOTAL_PASSED');
    expect(sig.signatureFormat).toBe('PAdES-BASELINE-B');
    expect(sig.signerCertificate?.sha256).toBe(rsaSigner.sha256);
    expect(sig.certificateChain.map((c) => c.sha256)).toEqual([
      rsaSigner.sha256,
      rsaIntermediate.sha256,
      rsaRoot.sha256,
    ]);

    // Without the intermediate (offline: no AIA fetching) the chain cannot reach the root.
    const without = only(validatePdfSignatures({ pdf, trustedRootsPem: [rsaRoot.certPem] }));
    expect(without.indication).toBe('INDETERMINATE');
    expect(without.subIndication).toBe('NO_CERTIFICATE_CHAIN_FOUND');
    expect(without.chainTrusted).toBe(false);
  });

  it('fails a signature when a byte inside the signed byte range is flipped', () => {
    const [a, b] = byteRange(ecSignedByPyHanko);
    const at = ecSignedByPyHanko.indexOf('Signed by pyHanko');
    expect(at).toBeGreaterThanOrEqual(a);
    expect(at).toBeLessThan(a + b);
    const tampered = Buffer.from(ecSignedByPyHanko);
    tampered[at] ^= 0x01; // 'S' -> 'R'
    const report = validatePdfSignatures({ pdf: tampered, trustedRootsPem: [root.certPem] });
    logTiming('tampered', report);
    const sig = only(report);
    expect(sig.indication).toBe('TOTAL_FAILED');
    expect(sig.subIndication).toBe('HASH_FAILURE');
    expect(sig.signedDataIntact).toBe(false);
    expect(sig.signatureValid).toBe(false);
    expect(sig.basicBuildingBlocks.cryptographicVerification?.indication).toBe('FAILED');
    expect(sig.errors.length).toBeGreaterThan(0);
  });

  it('does not trust the signer when only an unrelated root is given', () => {
    const report = validatePdfSignatures({ pdf: ecSignedByPyHanko, trustedRootsPem: [otherRoot.certPem] });
    const sig = only(report);
    expect(sig.indication).toBe('INDETERMINATE');
    expect(sig.subIndication).toBe('NO_CERTIFICATE_CHAIN_FOUND');
    expect(sig.chainTrusted).toBe(false);
    expect(sig.certificateChain.some((c) => c.trusted)).toBe(false);
    // The signature itself is still intact: only the trust is missing.
    expect(sig.signatureIntact).toBe(true);
    expect(sig.basicBuildingBlocks.cryptographicVerification?.indication).toBe('PASSED');
  });

  it('reports DSS default policy verdict when asked for it', () => {
    const sig = only(
      validatePdfSignatures({ pdf: ecSignedByPyHanko, trustedRootsPem: [root.certPem], policy: 'default' }),
    );
    expect(sig.indication).toBe('INDETERMINATE');
    expect(sig.subIndication).toBe(sig.defaultPolicy.subIndication);
    expect(sig.signatureIntact).toBe(true);
  });

  it('throws PdfValidatorError with the tool stderr when the input is not a PDF', () => {
    let caught: unknown;
    try {
      validatePdfSignatures({ pdf: Buffer.from('not a pdf'), trustedRootsPem: [root.certPem] });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(PdfValidatorError);
    expect((caught as PdfValidatorError).name).toBe('PdfValidatorError');
    expect((caught as PdfValidatorError).stderr).toMatch(/Document format not recognized/);
  });

  it('finds no signature in an unsigned PDF', () => {
    const report = validatePdfSignatures({ pdf: minimalPdf(), trustedRootsPem: [root.certPem] });
    expect(report.signaturesCount).toBe(0);
    expect(report.signatures).toEqual([]);
  });
});
