/**
 * Everything the CA publishes, judged by two linters of the CA world (pkilint from PyPI, zlint from the Go
 * module proxy, installed by the test itself): leaf certificates of every key type, the root, issuing CA
 * and OCSP responder certificates, both CRLs, and OCSP responses of every kind. Findings at warning level
 * or above fail the test, except the ones docs/certificate-profile.md explains (EXPLAINED below).
 */
import { randomBytes } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { CertificateRepository } from '../../adapters/dynamodb/src/certificate-repository';
import { connectHsm, type Pkcs11Hsm, type PrivateKeyRef } from '@pipeline/adapters/hsm';
import { loadCaConfig, loadConfig } from '@pipeline/config';
import { KEY_TYPES } from '@pipeline/core/shared';
import type { RevocationReason } from '@pipeline/core/pki';
import { pemToDer } from '@pipeline/der';
import { createTestTables } from '../../../scripts/local/resources';
import { runOpenssl } from '../../../scripts/local/verify/openssl';
import {
  ensurePkiLinters,
  formatFindings,
  lintCertificate,
  lintCrl,
  lintOcspResponse,
  type PkiLintFinding,
} from '../../../scripts/local/verify/pki-lint';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import { CertificateAuthority, OcspResponder, RevocationAuthority, revokeCertificate } from '../src';
import type { CaCertificates } from '@pipeline/core/pki';
import { caStores, evidenceFor, keyAndCsr } from './helpers';
import { directAssertionVerifier } from '../../../scripts/local/idp/direct-assertions';

/** Findings docs/certificate-profile.md explains as deliberate (none today: every artefact lints clean). */
const EXPLAINED: readonly string[] = [];
/** The findings that count, formatted: the expectation reads them in a failure message. */
const problems = (findings: readonly PkiLintFinding[]): string =>
  formatFindings(
    findings.filter((f) => ['fatal', 'error', 'warning'].includes(f.severity) && !EXPLAINED.includes(f.code)),
  );
const CLEAN = formatFindings([]);

/** A public host in the pointers: local certificates point at 127.0.0.1, which EN 319 412-2 lints refuse. */
const PKI_BASE_URL = 'http://pki.signing-pipeline.example.com';

const config = loadConfig(process.env);
const caConfig = { ...loadCaConfig(process.env), pkiBaseUrl: PKI_BASE_URL };
let hsm: Pkcs11Hsm;
let doc: DynamoDBDocumentClient;
let tables: { certificates: string; audit: string };
let caCerts: CaCertificates;
let ca: CertificateAuthority;
let certificates: CertificateRepository;
let revocation: RevocationAuthority;
let ocspHsm: Pkcs11Hsm;
let responder: OcspResponder;
const keys: PrivateKeyRef[] = [];

beforeAll(async () => {
  ensurePkiLinters();
  hsm = await connectHsm(config.hsm, config.aws);
  doc = documentClient(config.aws);
  tables = await createTestTables(['certificates', 'audit']);
  caCerts = (await caCertificateStore(caConfig.certsSource, config.aws).read())!;
  const stores = caStores(doc, tables);
  certificates = stores.certificates;
  ca = await CertificateAuthority.create({
    hsm,
    evidence: directAssertionVerifier(),
    ...stores,
    caCertificates: caCerts,
    config: caConfig,
  });
  revocation = await RevocationAuthority.create({
    hsm,
    store: certificates,
    caCertificates: caCerts,
    config: caConfig,
  });
  ocspHsm = await connectHsm(
    { ...config.hsm, tokenLabel: caConfig.ocspTokenLabel, pinSource: caConfig.ocspPinSource },
    config.aws,
  );
  responder = await OcspResponder.create({
    hsm: ocspHsm,
    store: certificates,
    caCertificates: caCerts,
    config: caConfig,
    publishedCrl: async () => undefined,
  });
}, 300_000);

afterAll(async () => {
  for (const key of keys) await hsm.destroy(key);
  await hsm?.close();
  await ocspHsm?.close();
  doc?.destroy();
});

async function issue(keyType: (typeof KEY_TYPES)[number]) {
  const { csrDer } = await keyAndCsr(hsm, keyType, keys);
  return ca.issue({ ...evidenceFor({ keyType }), csrDer });
}

test.each(KEY_TYPES)(
  '%s leaf: no finding (ETSI EN 319 412-2 natural person, PKIX chain, zlint)',
  async (keyType) => {
    const issued = await issue(keyType);
    // The leaf the linters judge carries the Authentication Context extension (RFC 7773), not critical.
    const text = runOpenssl(['x509', '-in', 'c.pem', '-noout', '-text'], { 'c.pem': issued.certificatePem });
    expect(text.stdout).toMatch(/1\.2\.752\.201\.5\.1:\s*\n/);
    const findings = lintCertificate(issued.certificatePem, 'leaf', { issuer: caCerts.issuingPem });
    expect(problems(findings)).toBe(CLEAN);
  },
  120_000,
);

test('EC-P256 leaf under zlint with every default lint source (CA/Browser Forum, root programs included): no finding', async () => {
  // With its documentSigning EKU the leaf is no TLS server certificate: the TLS rules do not apply.
  const issued = await issue('EC-P256');
  const findings = lintCertificate(issued.certificatePem, 'leaf', {
    issuer: caCerts.issuingPem,
    zlintExcludeSources: [],
  });
  expect(problems(findings)).toBe(CLEAN);
}, 120_000);

test('root, issuing CA, OCSP responder and TSA certificates: no finding', () => {
  const lint = (pem: string, kind: 'root-ca' | 'issuing-ca' | 'ocsp-signer' | 'tsa', issuer?: string) =>
    problems(lintCertificate(pem, kind, issuer ? { issuer } : {}));
  expect(lint(caCerts.rootPem, 'root-ca')).toBe(CLEAN);
  expect(lint(caCerts.issuingPem, 'issuing-ca', caCerts.rootPem)).toBe(CLEAN);
  expect(lint(caCerts.ocspPem!, 'ocsp-signer', caCerts.issuingPem)).toBe(CLEAN);
  expect(lint(caCerts.tsaPem!, 'tsa', caCerts.rootPem)).toBe(CLEAN);
}, 120_000);

test('CRLs with revocations of every reason, and the root CRL: no finding', async () => {
  const reasons: RevocationReason[] = [
    'unspecified',
    'keyCompromise',
    'affiliationChanged',
    'superseded',
    'cessationOfOperation',
    'privilegeWithdrawn',
  ];
  for (const reason of reasons) {
    const issued = await issue('EC-P256');
    expect(
      (await revokeCertificate({ store: certificates }, issued.serialHex, reason, 'operator')).outcome,
    ).toBe('revoked');
  }
  const issuing = await revocation.issuingCrl();
  expect(issuing.entries).toBeGreaterThanOrEqual(reasons.length);
  expect(problems(lintCrl(issuing.der))).toBe(CLEAN);
  expect(problems(lintCrl((await revocation.rootCrl()).der))).toBe(CLEAN);
}, 120_000);

test('OCSP responses: good, revoked, unknown, and the error statuses: no finding', async () => {
  const good = await issue('EC-P256');
  const revoked = await issue('RSA-2048');
  await revokeCertificate({ store: certificates }, revoked.serialHex, 'keyCompromise', 'operator');
  const request = (args: string[], files: Record<string, string>): Buffer =>
    runOpenssl(['ocsp', ...args, '-nonce', '-reqout', 'req.der'], files, ['req.der']).outputs['req.der'];
  const responses = [
    request(['-issuer', 'i.pem', '-cert', 'c.pem'], {
      'i.pem': caCerts.issuingPem,
      'c.pem': good.certificatePem,
    }),
    request(['-issuer', 'i.pem', '-cert', 'c.pem'], {
      'i.pem': caCerts.issuingPem,
      'c.pem': revoked.certificatePem,
    }),
    request(['-issuer', 'i.pem', '-serial', `0x${randomBytes(16).toString('hex')}`], {
      'i.pem': caCerts.issuingPem,
    }),
    Buffer.from('garbage'),
  ];
  for (const requestDer of responses) {
    const response = (await responder.respond(requestDer)).der;
    expect(problems(lintOcspResponse(response))).toBe(CLEAN);
  }
  // The responder certificate inside the responses is the one linted above.
  expect(pemToDer(caCerts.ocspPem!).length).toBeGreaterThan(0);
}, 120_000);
