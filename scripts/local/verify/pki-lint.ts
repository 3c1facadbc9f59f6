/**
 * Test support: certificates, CRLs and OCSP responses judged by two independent linters of the CA world,
 * installed from package registries by scripts/local/validators/pki/install.sh into .local/validators/pki:
 *
 * - pkilint (DigiCert, PyPI; version pinned in scripts/local/validators/pki/pkilint-requirements.txt)
 * - zlint (ZMap, Go module proxy; version pinned in scripts/local/validators/pki/zlint/go.mod)
 *
 * Which pkilint command lints what:
 * - leaf (natural-person signing certificate): `lint_etsi_cert lint -t NCP-NATURAL-PERSON-CERTIFICATE`,
 *   ETSI EN 319 412-2 (natural person) on top of every RFC 5280 check of `lint_pkix_cert`. NCP is the
 *   non-qualified natural-person type (EN 319 411-1 NCP, no qcStatements expected); the qualified ones
 *   are QCP-N-QSCD-NON-EIDAS-/QCP-N-QSCD-EIDAS-FINAL-CERTIFICATE (option `etsiType`).
 * - root CA, issuing CA, OCSP responder: `lint_pkix_cert lint` (RFC 5280; pkilint has no ETSI profile for
 *   CA certificates, and EN 319 412-2 is about end-entity certificates).
 * - with `issuer` given, also `lint_pkix_signer_signee_cert_chain lint issuer subject`: name chaining,
 *   AKI = issuer SKI, policies present in the issuer, and the signature verified with the issuer's key.
 * - CRL: `lint_crl lint -t CRL -p PKIX` (RFC 5280; the BR profile is the TLS Baseline Requirements').
 * - OCSP response: `lint_ocsp_response lint` (RFC 6960).
 *
 * zlint lints all three (this version's command line parses a certificate, else a CRL, else an OCSP
 * response). Its CA/Browser Forum, browser root-program and CT lints are excluded (ZLINT_EXCLUDED_SOURCES):
 * they are rules for publicly-trusted TLS, S/MIME and code-signing CAs, and zlint treats a certificate
 * without extendedKeyUsage as a TLS server certificate, so every TLS subscriber rule (SAN required,
 * 398/200-day validity, no nonRepudiation on EC keys, ...) would fire on our signing certificates. What
 * remains: RFC 5280, 3279, 5480, 5891, 6960, 8813, ETSI ESI and zlint's community lints. (Excluded rather
 * than included: this zlint's -includeSources cannot name RFC6960, its OCSP source.)
 *
 * Severities, one scale for both (findings below `minSeverity`, default 'notice', are dropped):
 *   pkilint FATAL/ERROR/WARNING/NOTICE/INFO -> fatal/error/warning/notice/info (DEBUG never asked for)
 *   zlint   fatal/error/warn/info -> fatal/error/warning/notice (zlint's "info" is its Notice status, the
 *           n_* lints); pass, NA (not applicable) and NE (not yet effective) are no findings.
 * An artefact a linter cannot parse at all is a fatal finding (`pkilint.load_failure`,
 * `zlint.parse_failure`); a linter that fails otherwise throws PkiLintError.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_DIR, ROOT } from '../paths';
import { withTempDir } from './temp-dir';
import { runInstaller, ToolError } from './tool';

export const PKI_LINT_DIR = join(LOCAL_DIR, 'validators', 'pki');
const BIN = join(PKI_LINT_DIR, 'bin');
const SCRIPT_DIR = join(ROOT, 'scripts', 'local', 'validators', 'pki');
const INSTALL_SCRIPT = join(SCRIPT_DIR, 'install.sh');

export type PkiLinter = 'pkilint' | 'zlint';
export type PkiLintSeverity = 'fatal' | 'error' | 'warning' | 'notice' | 'info';

export interface PkiLintFinding {
  readonly linter: PkiLinter;
  readonly severity: PkiLintSeverity;
  /** pkilint's finding code (e.g. `etsi.en_319_412_2.nat-4.3.2-1.mixed_key_usage_setting`) or zlint's lint name. */
  readonly code: string;
  readonly message?: string;
  /** pkilint: the ASN.1 node path; chain findings are prefixed `chain:`. */
  readonly node?: string;
}

export type CertificateKind = 'leaf' | 'issuing-ca' | 'root-ca' | 'ocsp-signer' | 'tsa';

/** ETSI EN 319 412 natural- and legal-person certificate types of `lint_etsi_cert` that are no web certificates. */
export type EtsiCertificateType =
  | 'NCP-NATURAL-PERSON-CERTIFICATE'
  | 'QCP-N-QSCD-NON-EIDAS-FINAL-CERTIFICATE'
  | 'QCP-N-QSCD-EIDAS-FINAL-CERTIFICATE'
  | 'NCP-LEGAL-PERSON-CERTIFICATE';

/**
 * zlint lint sources left out by default, and why:
 * CABF_BR (TLS Baseline Requirements), CABF_EV (EV TLS), CABF_CS_BR (code signing), CABF_SMIME_BR
 * (S/MIME): requirements for publicly-trusted CAs of those kinds; Mozilla, Apple, Chrome: root programs
 * of browsers and mail clients; RFC6962: Certificate Transparency, which only web certificates carry.
 */
export const ZLINT_EXCLUDED_SOURCES: readonly string[] = [
  'CABF_BR',
  'CABF_EV',
  'CABF_CS_BR',
  'CABF_SMIME_BR',
  'Mozilla',
  'Apple',
  'Chrome',
  'RFC6962',
];

export interface PkiLintOptions {
  /** Findings less severe than this are dropped. Default 'notice' (pkilint's INFO findings only identify). */
  readonly minSeverity?: PkiLintSeverity;
  /** Finding codes to drop, e.g. `etsi.internal_domain_name` for certificates that point at 127.0.0.1. */
  readonly ignore?: readonly string[];
  /** Which linters to run; default both. */
  readonly linters?: readonly PkiLinter[];
  /** zlint lint sources to exclude; default ZLINT_EXCLUDED_SOURCES, [] runs every zlint lint. */
  readonly zlintExcludeSources?: readonly string[];
}

export interface CertificateLintOptions extends PkiLintOptions {
  /** The issuer's certificate (DER or PEM): adds pkilint's issuer/subject chain linter. */
  readonly issuer?: Buffer | string;
  /** Leaves only: the ETSI certificate type; default NCP-NATURAL-PERSON-CERTIFICATE. */
  readonly etsiType?: EtsiCertificateType;
}

export interface CrlLintOptions extends PkiLintOptions {
  /** CRL (of end-entity certificates, the default) or ARL (of CA certificates). */
  readonly crlType?: 'CRL' | 'ARL';
  /** PKIX (RFC 5280, default) or BR (CA/Browser Forum TLS Baseline Requirements on top). */
  readonly profile?: 'PKIX' | 'BR';
}

/** A linter could not be installed or failed to run (not: it reported findings). */
export class PkiLintError extends ToolError {
  override readonly name = 'PkiLintError';
}

const SEVERITY_RANK: Record<PkiLintSeverity, number> = { info: 0, notice: 1, warning: 2, error: 3, fatal: 4 };

const PKILINT_SEVERITY: Record<string, PkiLintSeverity> = {
  FATAL: 'fatal',
  ERROR: 'error',
  WARNING: 'warning',
  NOTICE: 'notice',
  INFO: 'info',
};

const ZLINT_SEVERITY: Record<string, PkiLintSeverity | undefined> = {
  fatal: 'fatal',
  error: 'error',
  warn: 'warning',
  info: 'notice',
  pass: undefined,
  NA: undefined,
  NE: undefined,
};

export interface PkiLinters {
  readonly binDir: string;
  readonly pkilintVersion: string;
  readonly zlintVersion: string;
}

let installed: PkiLinters | undefined;

/**
 * Installs both linters once per process if needed: runs install.sh synchronously, which returns at once
 * when everything is in place. Throws PkiLintError with the installer's messages otherwise.
 */
export function ensurePkiLinters(): PkiLinters {
  if (!installed) {
    runInstaller(INSTALL_SCRIPT, 'PKI linter', PkiLintError);
    const pin = (file: string, pattern: RegExp): string =>
      pattern.exec(readFileSync(join(SCRIPT_DIR, file), 'utf8'))?.[1] ?? 'unknown';
    installed = {
      binDir: BIN,
      pkilintVersion: pin('pkilint-requirements.txt', /^pkilint==(\S+)/m),
      zlintVersion: pin('zlint/go.mod', /^require github\.com\/zmap\/zlint\/v3 (\S+)/m),
    };
  }
  return installed;
}

/** DER of a DER buffer or of the first PEM block of a string. */
function toDer(artefact: Buffer | string): Buffer {
  if (Buffer.isBuffer(artefact)) return artefact;
  const match = /-----BEGIN [A-Z0-9 ]+-----([\s\S]*?)-----END [A-Z0-9 ]+-----/.exec(artefact);
  if (!match) throw new Error('pki-lint: a string argument must be PEM');
  return Buffer.from(match[1].replace(/\s+/g, ''), 'base64');
}

function run(command: string, args: string[], cwd: string) {
  const result = spawnSync(join(BIN, command), args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
    timeout: 2 * 60_000,
  });
  if (result.error) {
    throw new PkiLintError(`${command} did not run: ${result.error.message}`, result.stderr ?? '', null);
  }
  return { stdout: result.stdout ?? '', stderr: result.stderr ?? '', status: result.status };
}

interface PkilintReport {
  results: Array<{
    node_path: string;
    validator: string;
    finding_descriptions: Array<{ severity: string; code: string; message: string | null }>;
  }>;
}

/**
 * Runs one pkilint command (`<command> lint -f JSON -s <threshold> ...args`); its exit code is the number
 * of findings, so the JSON on stdout is what tells success from failure.
 */
function pkilint(
  command: string,
  args: string[],
  cwd: string,
  minSeverity: PkiLintSeverity,
  nodePrefix = '',
): PkiLintFinding[] {
  const threshold = Object.keys(PKILINT_SEVERITY).find((k) => PKILINT_SEVERITY[k] === minSeverity)!;
  const out = run(command, ['lint', '-f', 'JSON', '-s', threshold, '--document-format', 'DER', ...args], cwd);
  let report: PkilintReport;
  try {
    report = JSON.parse(out.stdout) as PkilintReport;
  } catch {
    // The document did not decode at all (e.g. not DER of the expected structure).
    const loadFailure = /^Failed to load .*$/m.exec(out.stderr);
    if (loadFailure) {
      return [
        { linter: 'pkilint', severity: 'fatal', code: 'pkilint.load_failure', message: loadFailure[0] },
      ];
    }
    throw new PkiLintError(`${command} printed no JSON report (exit ${out.status})`, out.stderr, out.status);
  }
  return report.results.flatMap((result) =>
    result.finding_descriptions.map((finding) => ({
      linter: 'pkilint' as const,
      severity: PKILINT_SEVERITY[finding.severity] ?? 'info',
      code: finding.code,
      ...(finding.message ? { message: finding.message } : {}),
      node: `${nodePrefix}${result.node_path}`,
    })),
  );
}

/** Runs zlint on one DER file; `notLintable` tells which parse failures mean "nothing for zlint here". */
function zlint(file: string, cwd: string, excludeSources: readonly string[], notLintable?: RegExp) {
  const args = ['-format', 'der'];
  if (excludeSources.length > 0) args.push('-excludeSources', excludeSources.join(','));
  const out = run('zlint', [...args, file], cwd);
  if (out.status !== 0) {
    const parse = /unable to parse input as any known type.*$/m.exec(out.stderr);
    if (parse && notLintable?.test(parse[0])) return [];
    if (parse) {
      return [
        {
          linter: 'zlint' as const,
          severity: 'fatal' as const,
          code: 'zlint.parse_failure',
          message: parse[0].replace(/"$/, ''),
        },
      ];
    }
    throw new PkiLintError(`zlint failed (exit ${out.status})`, out.stderr, out.status);
  }
  let results: Record<string, { result: string; details?: string }>;
  try {
    results = JSON.parse(out.stdout) as typeof results;
  } catch {
    throw new PkiLintError('zlint printed no JSON report', out.stderr, out.status);
  }
  const findings: PkiLintFinding[] = [];
  for (const [name, { result, details }] of Object.entries(results)) {
    if (!(result in ZLINT_SEVERITY)) {
      throw new PkiLintError(`zlint reported an unknown result "${result}" for ${name}`, '', out.status);
    }
    const severity = ZLINT_SEVERITY[result];
    if (severity)
      findings.push({ linter: 'zlint', severity, code: name, ...(details ? { message: details } : {}) });
  }
  return findings;
}

/** Severity filter, ignore list, duplicates removed; most severe first. */
function finish(findings: PkiLintFinding[], options: PkiLintOptions): PkiLintFinding[] {
  const min = SEVERITY_RANK[options.minSeverity ?? 'notice'];
  const ignore = new Set(options.ignore ?? []);
  const seen = new Set<string>();
  return findings
    .filter((f) => SEVERITY_RANK[f.severity] >= min && !ignore.has(f.code))
    .filter((f) => {
      const key = JSON.stringify([f.linter, f.severity, f.code, f.node ?? '', f.message ?? '']);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort(
      (a, b) =>
        SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] ||
        a.linter.localeCompare(b.linter) ||
        a.code.localeCompare(b.code),
    );
}

const wants = (options: PkiLintOptions, linter: PkiLinter): boolean =>
  (options.linters ?? ['pkilint', 'zlint']).includes(linter);

/**
 * Lints one certificate (DER, or PEM text) as the given kind. Synchronous; about a second per pkilint
 * command (Python start-up), milliseconds for zlint.
 */
export function lintCertificate(
  certificate: Buffer | string,
  kind: CertificateKind,
  options: CertificateLintOptions = {},
): PkiLintFinding[] {
  ensurePkiLinters();
  const der = toDer(certificate);
  const min = options.minSeverity ?? 'notice';
  return withTempDir('pki-lint', (dir) => {
    writeFileSync(join(dir, 'certificate.der'), der);
    const findings: PkiLintFinding[] = [];
    if (wants(options, 'pkilint')) {
      if (kind === 'leaf') {
        const type = options.etsiType ?? 'NCP-NATURAL-PERSON-CERTIFICATE';
        findings.push(...pkilint('lint_etsi_cert', ['-t', type, 'certificate.der'], dir, min));
      } else {
        findings.push(...pkilint('lint_pkix_cert', ['certificate.der'], dir, min));
      }
      // A self-signed root checked against itself would only report its (allowed) missing AKI.
      const issuer = options.issuer === undefined ? undefined : toDer(options.issuer);
      if (issuer && !issuer.equals(der)) {
        writeFileSync(join(dir, 'issuer.der'), issuer);
        findings.push(
          ...pkilint(
            'lint_pkix_signer_signee_cert_chain',
            ['issuer.der', 'certificate.der'],
            dir,
            min,
            'chain:',
          ),
        );
      }
    }
    if (wants(options, 'zlint')) {
      findings.push(...zlint('certificate.der', dir, options.zlintExcludeSources ?? ZLINT_EXCLUDED_SOURCES));
    }
    return finish(findings, options);
  });
}

/** Lints one CRL (DER, or PEM text): `lint_crl -t CRL -p PKIX` and zlint's CRL lints. */
export function lintCrl(crl: Buffer | string, options: CrlLintOptions = {}): PkiLintFinding[] {
  ensurePkiLinters();
  const der = toDer(crl);
  return withTempDir('pki-lint', (dir) => {
    writeFileSync(join(dir, 'crl.der'), der);
    const findings: PkiLintFinding[] = [];
    if (wants(options, 'pkilint')) {
      const args = ['-t', options.crlType ?? 'CRL', '-p', options.profile ?? 'PKIX', 'crl.der'];
      findings.push(...pkilint('lint_crl', args, dir, options.minSeverity ?? 'notice'));
    }
    if (wants(options, 'zlint')) {
      findings.push(...zlint('crl.der', dir, options.zlintExcludeSources ?? ZLINT_EXCLUDED_SOURCES));
    }
    return finish(findings, options);
  });
}

/**
 * Lints one OCSP response (DER): `lint_ocsp_response` and zlint's OCSP lints. zlint (Go's ocsp package)
 * only parses `successful` responses: for an error response (malformedRequest, unauthorized, tryLater...)
 * only pkilint reports.
 */
export function lintOcspResponse(response: Buffer, options: PkiLintOptions = {}): PkiLintFinding[] {
  ensurePkiLinters();
  return withTempDir('pki-lint', (dir) => {
    writeFileSync(join(dir, 'response.der'), response);
    const findings: PkiLintFinding[] = [];
    if (wants(options, 'pkilint')) {
      findings.push(...pkilint('lint_ocsp_response', ['response.der'], dir, options.minSeverity ?? 'notice'));
    }
    if (wants(options, 'zlint')) {
      findings.push(
        ...zlint(
          'response.der',
          dir,
          options.zlintExcludeSources ?? ZLINT_EXCLUDED_SOURCES,
          /parsing as OCSP response: ocsp: error from server/,
        ),
      );
    }
    return finish(findings, options);
  });
}

/** One line per finding, for test failure messages: `fatal pkilint itu.invalid_asn1_syntax @node: message`. */
export function formatFindings(findings: readonly PkiLintFinding[]): string {
  if (findings.length === 0) return 'no findings';
  return findings
    .map((f) => {
      const at = f.node ? ` @ ${f.node}` : '';
      const message = f.message ? `: ${f.message}` : '';
      return `${f.severity.padEnd(7)} ${f.linter.padEnd(7)} ${f.code}${at}${message}`;
    })
    .join('\n');
}
