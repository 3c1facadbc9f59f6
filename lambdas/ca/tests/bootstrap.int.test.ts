/**
 * The CA hierarchy bootstrap with an EC-P384 CA (fixed test labels on the local token, so repeated runs
 * reuse the same keys) and a temporary certificate directory: idempotence, repair of missing or stale
 * certificates, key attributes, and leaves signed with ECDSA SHA-384 that openssl accepts.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { connectHsm, type Pkcs11Hsm, type PrivateKeyRef } from '@pipeline/adapters/hsm';
import { loadCaConfig, loadConfig, type CaConfig } from '@pipeline/config';
import type { KeyType } from '@pipeline/core/shared';
import { createTestTables } from '../../../scripts/local/resources';
import { opensslVerifyChain } from '../../../scripts/local/verify/openssl';
import { fileCaCertificateStore } from '@pipeline/adapters/parameters';
import { CaNotReadyError, CertificateAuthority, bootstrapCaHierarchy, findCaKey } from '../src';
import { caStores, evidenceFor, keyAndCsr, openssl } from './helpers';
import { directAssertionVerifier } from '../../../scripts/local/idp/direct-assertions';

const config = loadConfig(process.env);
const ecCa: CaConfig = {
  ...loadCaConfig(process.env),
  keyType: 'EC-P384',
  rootKeyLabel: 'test-ca-root-p384-v1',
  issuingKeyLabel: 'test-ca-issuing-p384-v1',
  organization: 'Test Pipeline',
};
let hsm: Pkcs11Hsm;
let dir: string;
const keys: PrivateKeyRef[] = [];

beforeAll(async () => {
  hsm = await connectHsm(config.hsm, config.aws);
  dir = mkdtempSync(join(tmpdir(), 'ca-bootstrap-'));
});

afterAll(async () => {
  for (const key of keys) await hsm.destroy(key);
  await hsm?.close();
  rmSync(dir, { recursive: true, force: true });
});

const read = (name: string): string => readFileSync(join(dir, name), 'utf8');

describe('bootstrapCaHierarchy', () => {
  it('creates the hierarchy once and then changes nothing', async () => {
    const store = fileCaCertificateStore(dir);
    const first = await bootstrapCaHierarchy(hsm, ecCa, store);
    expect(first.changes).toEqual(
      expect.arrayContaining(['issued the root CA certificate', 'issued the issuing CA certificate']),
    );
    const second = await bootstrapCaHierarchy(hsm, ecCa, store);
    expect(second.changes).toEqual([]);

    const verdict = opensslVerifyChain({
      rootPem: read('root.pem'),
      intermediatePems: [],
      leafPem: read('issuing.pem'),
    });
    expect(verdict.ok).toBe(true);
    const rootText = openssl(['x509', '-in', 'r.pem', '-noout', '-text'], { 'r.pem': read('root.pem') });
    expect(rootText).toContain('Signature Algorithm: ecdsa-with-SHA384');
    expect(rootText).toContain('NIST CURVE: P-384');
    expect(rootText).toMatch(/Basic Constraints: critical\s+CA:TRUE\n/);
    expect(rootText).toMatch(/Key Usage: critical\s+Certificate Sign, CRL Sign/);
    expect(rootText).toContain('Subject: C = SE, O = Test Pipeline, CN = Test Pipeline Root CA');
    const issuingText = openssl(['x509', '-in', 'i.pem', '-noout', '-text'], {
      'i.pem': read('issuing.pem'),
    });
    expect(issuingText).toMatch(/Basic Constraints: critical\s+CA:TRUE, pathlen:0/);
    expect(issuingText).toContain('Issuer: C = SE, O = Test Pipeline, CN = Test Pipeline Root CA');
  });

  it('re-issues only a missing issuing certificate and keeps the root (the trust anchor)', async () => {
    const store = fileCaCertificateStore(dir);
    const rootBefore = read('root.pem');
    const issuingBefore = read('issuing.pem');
    unlinkSync(join(dir, 'issuing.pem'));
    const result = await bootstrapCaHierarchy(hsm, ecCa, store);
    expect(result.changes).toEqual([
      'issued the issuing CA certificate',
      `stored the CA certificates in ${dir}`,
    ]);
    expect(read('root.pem')).toBe(rootBefore);
    expect(read('issuing.pem')).not.toBe(issuingBefore);
    expect(new X509Certificate(read('issuing.pem')).verify(new X509Certificate(rootBefore).publicKey)).toBe(
      true,
    );
  });

  it('replaces certificates that do not belong to the token keys', async () => {
    const store = fileCaCertificateStore(dir);
    const rootBefore = read('root.pem');
    writeFileSync(join(dir, 'root.pem'), read('issuing.pem'));
    const result = await bootstrapCaHierarchy(hsm, ecCa, store);
    expect(result.changes).toContain('issued the root CA certificate');
    expect(read('root.pem')).not.toBe(rootBefore);
    expect(
      new X509Certificate(read('root.pem')).publicKey.equals(new X509Certificate(rootBefore).publicKey),
    ).toBe(true);
  });

  it('generates the CA keys as token objects, sensitive and never extractable', async () => {
    for (const label of [ecCa.rootKeyLabel, ecCa.issuingKeyLabel]) {
      const key = await findCaKey(hsm, label, 'EC-P384');
      expect(await hsm.keyAttributes(key!.ref)).toEqual({
        token: true,
        sensitive: true,
        extractable: false,
        sign: true,
        label,
      });
    }
  });

  it('refuses a configured key type that differs from the keys on the token, generating nothing', async () => {
    const store = fileCaCertificateStore(dir);
    await expect(bootstrapCaHierarchy(hsm, { ...ecCa, keyType: 'RSA-3072' }, store)).rejects.toThrow(
      CaNotReadyError,
    );
    // A fresh connection (the adapter caches handles by label) finds no RSA key under that label.
    const fresh = await connectHsm(config.hsm, config.aws);
    try {
      expect(await fresh.findPrivateKey(ecCa.rootKeyLabel, 'RSA-3072')).toBeUndefined();
      expect(await fresh.findPrivateKey(ecCa.rootKeyLabel, 'EC-P384')).toBeDefined();
    } finally {
      await fresh.close();
    }
  });
});

describe('an EC-P384 CA (ECDSA with SHA-384)', () => {
  let doc: DynamoDBDocumentClient;
  let ca: CertificateAuthority;
  let tables: { certificates: string; audit: string };

  beforeAll(async () => {
    doc = documentClient(config.aws);
    tables = await createTestTables(['certificates', 'audit']);
    ca = await CertificateAuthority.create({
      hsm,
      evidence: directAssertionVerifier(),
      ...caStores(doc, tables),
      caCertificates: (await fileCaCertificateStore(dir).read())!,
      config: ecCa,
    });
  });

  afterAll(() => doc?.destroy());

  it.each<KeyType>(['RSA-2048', 'EC-P256'])('issues %s leaves that openssl verifies', async (keyType) => {
    const { csrDer } = await keyAndCsr(hsm, keyType, keys);
    const issued = await ca.issue({ ...evidenceFor({ keyType }), csrDer });
    const verdict = opensslVerifyChain({
      rootPem: read('root.pem'),
      intermediatePems: [read('issuing.pem')],
      leafPem: issued.certificatePem,
    });
    expect(verdict.ok).toBe(true);
    const text = openssl(['x509', '-in', 'c.pem', '-noout', '-text'], { 'c.pem': issued.certificatePem });
    expect(text).toContain('Signature Algorithm: ecdsa-with-SHA384');
  });
});
