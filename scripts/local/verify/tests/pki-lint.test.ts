/**
 * The PKI lint wrapper (pkilint and zlint, installed from the registries by
 * scripts/local/validators/pki/install.sh) on artefacts made with the openssl command line: a reasonable
 * root parses in both linters; deliberately broken leaves, a CRL without a CRL number and undecodable
 * input yield the findings expected of each linter.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ensurePkiLinters,
  formatFindings,
  lintCertificate,
  lintCrl,
  lintOcspResponse,
  type PkiLintFinding,
  type PkiLinter,
} from '../pki-lint';

let dir: string;

const EXTENSIONS = `
[huge_arc_ca_leaf]
basicConstraints = critical,CA:TRUE,pathlen:0
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
certificatePolicies = 2.25.329800735698586629295641978511506172918

[ca_leaf_without_key_usage]
basicConstraints = critical,CA:TRUE,pathlen:0
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
certificatePolicies = 1.3.6.1.4.1.99999.1.1
`;

/** A v2 CRL (it has an extension) without the CRL number RFC 5280 5.2.3 requires. */
const CA_CONFIG = `
[ca]
default_ca = lint
[lint]
database = index.txt
default_md = sha256
default_crl_days = 7
crl_extensions = crl_ext
[crl_ext]
authorityKeyIdentifier = keyid:always
`;

/** Runs openssl in the fixture directory; `command` is split on spaces, '…' quotes an argument. */
function openssl(command: string): void {
  const args = (command.match(/'[^']*'|\S+/g) ?? []).map((a) => a.replace(/^'(.*)'$/, '$1'));
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
}
const text = (name: string): string => readFileSync(join(dir, name), 'utf8');
const der = (name: string): Buffer => readFileSync(join(dir, name));
const codes = (findings: readonly PkiLintFinding[], linter: PkiLinter): string[] =>
  findings.filter((f) => f.linter === linter).map((f) => f.code);

beforeAll(() => {
  // First run on a fresh machine: installs pkilint (PyPI) and builds zlint (Go module proxy), ~30-60 s.
  ensurePkiLinters();
  dir = mkdtempSync(join(tmpdir(), 'pki-lint-test-'));
  writeFileSync(join(dir, 'ext.cnf'), EXTENSIONS);
  writeFileSync(join(dir, 'ca.cnf'), CA_CONFIG);
  writeFileSync(join(dir, 'index.txt'), '');
  const root = (name: string, key: string) =>
    openssl(
      `req -x509 -newkey ${key} -nodes -keyout ${name}.key -out ${name}.pem -days 3650 -sha256 ` +
        `-subj '/C=SE/O=Lint Test/CN=Lint Test Root CA' -addext basicConstraints=critical,CA:TRUE ` +
        `-addext keyUsage=critical,keyCertSign,cRLSign -addext subjectKeyIdentifier=hash`,
    );
  root('root', 'rsa:2048');
  // Same name, another key.
  root('other-root', 'ec -pkeyopt ec_paramgen_curve:P-256');
  openssl('x509 -in root.pem -outform der -out root.der');
  openssl(
    'req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr ' +
      "-subj '/C=SE/SN=Oberg/GN=Asa/serialNumber=197001011234/CN=Asa Oberg'",
  );
  for (const profile of ['huge_arc_ca_leaf', 'ca_leaf_without_key_usage']) {
    openssl(
      'x509 -req -in leaf.csr -CA root.pem -CAkey root.key -set_serial 0x0123456789abcdef01 -days 365 ' +
        `-sha256 -extfile ext.cnf -extensions ${profile} -out ${profile}.pem`,
    );
  }
  openssl('ca -config ca.cnf -gencrl -keyfile root.key -cert root.pem -out crl.pem');
  // An OCSP response from openssl's own responder ("good"), signed by the root itself.
  openssl('ocsp -issuer root.pem -serial 0x0123456789abcdef01 -no_nonce -reqout req.der');
  writeFileSync(join(dir, 'index.txt'), 'V\t361231000000Z\t\t0123456789ABCDEF01\tunknown\t/CN=Asa Oberg\n');
  openssl(
    'ocsp -index index.txt -rsigner root.pem -rkey root.key -CA root.pem -reqin req.der ' +
      '-respout resp.der -ndays 1',
  );
}, 15 * 60_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the installed linters are the pinned versions', () => {
  const linters = ensurePkiLinters();
  expect(linters.pkilintVersion).toMatch(/^\d+\.\d+\.\d+$/);
  expect(linters.zlintVersion).toMatch(/^v3\.\d+\.\d+$/);
  for (const command of ['zlint', 'lint_pkix_cert', 'lint_etsi_cert', 'lint_crl', 'lint_ocsp_response']) {
    expect(existsSync(join(linters.binDir, command))).toBe(true);
  }
  const version = execFileSync(join(linters.binDir, 'zlint'), ['-version'], { encoding: 'utf8' });
  expect(version).toContain(linters.zlintVersion);
});

test('a reasonable openssl root parses in both linters and has no error-level finding', () => {
  // Every zlint source and every severity, so both linters are seen at work on it.
  const all = lintCertificate(text('root.pem'), 'root-ca', { minSeverity: 'info', zlintExcludeSources: [] });
  expect(codes(all, 'pkilint')).toContain('pkix.subject_key_identifier_method_1_identified');
  expect(codes(all, 'zlint')).toContain('n_ca_digital_signature_not_set');
  expect(all.map((f) => f.code)).not.toEqual(
    expect.arrayContaining([expect.stringMatching(/load_failure|parse_failure/)]),
  );
  // DER in, default filter (notice and worse, CA/B Forum and root-program lints excluded).
  const relevant = lintCertificate(der('root.der'), 'root-ca');
  const serious = relevant.filter((f) => f.severity === 'fatal' || f.severity === 'error');
  expect(serious).toEqual([]);
});

test('a leaf with a 2.25 huge-arc policy, CA:TRUE and no keyUsage: fatal in both linters', () => {
  const findings = lintCertificate(text('huge_arc_ca_leaf.pem'), 'leaf');
  const undecodable = findings.find((f) => f.linter === 'pkilint' && f.code === 'itu.invalid_asn1_syntax');
  expect(undecodable).toMatchObject({ severity: 'fatal', node: 'certificate.tbsCertificate.extensions.3' });
  expect(undecodable?.message).toMatch(/CertificatePolicies.*larger than 32-bits/);
  expect(codes(findings, 'pkilint')).toEqual(
    expect.arrayContaining([
      'etsi.en_319_412_2.key_usage_extension_absent',
      'pkix.ca_certificate_no_ku_extension',
    ]),
  );
  // Go's encoding/asn1 refuses arcs beyond 63 bits: zlint cannot parse the certificate at all.
  expect(findings).toContainEqual(
    expect.objectContaining({ linter: 'zlint', severity: 'fatal', code: 'zlint.parse_failure' }),
  );
  expect(findings[0].severity).toBe('fatal');
  expect(formatFindings(findings)).toMatch(/^fatal {3}pkilint itu\.invalid_asn1_syntax @ certificate\./m);
});

test('a leaf with CA:TRUE and pathlen but no keyUsage: RFC 5280 and EN 319 412-2 findings of both', () => {
  const findings = lintCertificate(text('ca_leaf_without_key_usage.pem'), 'leaf');
  expect(codes(findings, 'pkilint')).toEqual(
    expect.arrayContaining([
      'pkix.ca_certificate_no_ku_extension',
      'etsi.en_319_412_2.key_usage_extension_absent',
      'etsi.en_319_412_2.gen-4.3.11-2.crldp_extension_missing',
      'etsi.en_319_412_2.authority_info_access_extension_absent',
    ]),
  );
  expect(findings).toContainEqual({
    linter: 'zlint',
    severity: 'error',
    code: 'e_path_len_constraint_improperly_included',
  });
  expect(codes(findings, 'pkilint')).not.toContain('itu.invalid_asn1_syntax');
});

test('with the issuer given, the chain linter checks the signature with its key', () => {
  const ok = lintCertificate(text('ca_leaf_without_key_usage.pem'), 'leaf', {
    issuer: text('root.pem'),
    linters: ['pkilint'],
  });
  expect(ok.filter((f) => f.node?.startsWith('chain:'))).toEqual([]);
  // Same name, other key: the signature does not verify.
  const wrong = lintCertificate(text('ca_leaf_without_key_usage.pem'), 'leaf', {
    issuer: text('other-root.pem'),
    linters: ['pkilint'],
  });
  expect(wrong).toContainEqual(
    expect.objectContaining({
      linter: 'pkilint',
      severity: 'error',
      code: 'pkix.signature_verification_failed',
      node: expect.stringMatching(/^chain:/),
    }),
  );
  expect(codes(wrong, 'zlint')).toEqual([]);
});

test('minSeverity, ignore and linters filter the findings', () => {
  const zlintOnly = lintCertificate(text('huge_arc_ca_leaf.pem'), 'leaf', { linters: ['zlint'] });
  expect(zlintOnly.map((f) => f.code)).toEqual(['zlint.parse_failure']);
  const fatalOnly = lintCertificate(text('ca_leaf_without_key_usage.pem'), 'leaf', {
    minSeverity: 'fatal',
    linters: ['zlint'],
  });
  expect(fatalOnly).toEqual([]);
  const ignored = lintCertificate(text('ca_leaf_without_key_usage.pem'), 'leaf', {
    linters: ['zlint'],
    ignore: ['e_path_len_constraint_improperly_included'],
  });
  expect(ignored).toEqual([]);
});

test('a CRL without a CRL number: pkilint and zlint both report it; undecodable input is fatal', () => {
  const findings = lintCrl(text('crl.pem'));
  expect(codes(findings, 'pkilint')).toContain('pkix.crl_number_missing');
  expect(codes(findings, 'zlint')).toContain('e_crl_missing_crl_number');

  const garbage = lintCrl(Buffer.from('not a CRL'));
  expect(garbage).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ linter: 'pkilint', severity: 'fatal', code: 'pkilint.load_failure' }),
      expect.objectContaining({ linter: 'zlint', severity: 'fatal', code: 'zlint.parse_failure' }),
    ]),
  );
});

test('OCSP responses: openssl responder answer is linted by both; an error response only by pkilint', () => {
  const findings = lintOcspResponse(der('resp.der'), { minSeverity: 'info' });
  expect(findings.filter((f) => f.severity === 'fatal')).toEqual([]);
  // OCSPResponse { responseStatus malformedRequest }: nothing for zlint, nothing wrong for pkilint.
  expect(lintOcspResponse(Buffer.from('30030a0101', 'hex'))).toEqual([]);
  expect(lintOcspResponse(Buffer.from('garbage'))).toContainEqual(
    expect.objectContaining({ linter: 'pkilint', code: 'pkilint.load_failure' }),
  );
});

test('formatFindings: one line per finding, or "no findings"', () => {
  expect(formatFindings([])).toBe('no findings');
  expect(
    formatFindings([
      { linter: 'zlint', severity: 'warning', code: 'w_x', message: 'why' },
      { linter: 'pkilint', severity: 'error', code: 'pkix.y', node: 'certificate.tbsCertificate' },
    ]),
  ).toBe('warning zlint   w_x: why\nerror   pkilint pkix.y @ certificate.tbsCertificate');
});
