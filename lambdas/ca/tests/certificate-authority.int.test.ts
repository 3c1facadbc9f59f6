/**
 * The CA end to end against the real SoftHSM token (CA keys made by the bootstrap, one-time keys made
 * here) and DynamoDB Local, on identity assertions of the direct identity provider; every certificate is
 * judged by openssl and by Node's X509Certificate. Wired as the CA function is: each certificate stored
 * with the audit entry of its event in one transaction (a real audit log on its own table).
 */
import { ECDH, X509Certificate, createHash } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { id_rsaEncryption } from '@peculiar/asn1-rsa';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import {
  CertificateRepository,
  LoggedCertificateRepository,
} from '../../adapters/dynamodb/src/certificate-repository';
import { AuditRepository } from '../../adapters/dynamodb/src/audit-repository';
import { AuditLog } from '@pipeline/audit';
import { connectHsm, type Pkcs11Hsm, type PrivateKeyRef } from '@pipeline/adapters/hsm';
import { loadCaConfig, loadConfig, type CaConfig } from '@pipeline/config';
import { AssertionError, type SignerIdentity } from '@pipeline/core/identity';
import {
  eventsOf,
  signatureMadeEvent,
  verifyAuditLog,
  type AuditEvent,
  type AuditSink,
  type CarryingAppendOutcome,
  type CertificateIssuedEvent,
  type CarryingAuditSink,
} from '@pipeline/core/audit';
import type { KeyType } from '@pipeline/core/shared';
import { directAssertionVerifier } from '../../../scripts/local/idp/direct-assertions';
import { opensslVerifyChain } from '../../../scripts/local/verify/openssl';
import { createTestTables } from '../../../scripts/local/resources';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import {
  AlreadyCertifiedError,
  BadCsrError,
  CaNotReadyError,
  CertificateAuthority,
  CsrSignatureInvalidError,
  KeyMismatchError,
  PublicKeyAlreadyCertifiedError,
  PublicKeyNotCanonicalError,
  RequestUnknownError,
  SignerMismatchError,
  findCaKey,
} from '../src';
import type { CaCertificates } from '@pipeline/core/pki';
import { IDENTITY, evidenceFor, keyAndCsr, openssl } from './helpers';

const config = loadConfig(process.env);
const caConfig: CaConfig = loadCaConfig(process.env);
let hsm: Pkcs11Hsm;
let doc: DynamoDBDocumentClient;
let tables: { certificates: string; audit: string };
let caCerts: CaCertificates;
let ca: CertificateAuthority;
const keys: PrivateKeyRef[] = [];
const CHAINS = 2;
let log: AuditLog;
/** What the CA committed to its audit log, in order. */
const events: AuditEvent[] = [];
/** Every carrying append the CA made (its events, the carried groups) and how it ended. */
const carrying: Array<{
  events: readonly AuditEvent[];
  carried: readonly (readonly unknown[])[];
  outcome: CarryingAppendOutcome;
}> = [];
const audit: AuditSink & CarryingAuditSink = {
  append: async (event) => (await audit.appendMany([event]))[0],
  appendMany: async (batch) => {
    const receipts = await log.appendMany(batch);
    events.push(...batch);
    return receipts;
  },
  appendCarrying: async (batch, carried) => {
    const outcome = await log.appendCarrying(batch, carried);
    carrying.push({ events: batch, carried, outcome });
    if (outcome.written) events.push(...batch);
    return outcome;
  },
};

async function newCa(
  overrides: Partial<CaConfig> = {},
  options: { readsSignatures?: boolean } = {},
): Promise<CertificateAuthority> {
  const certificates = new CertificateRepository(doc, { tableName: tables.certificates });
  return CertificateAuthority.create({
    hsm,
    certificates,
    caCertificates: caCerts,
    config: { ...caConfig, ...overrides },
    evidence: directAssertionVerifier(),
    audit,
    logged: new LoggedCertificateRepository(certificates, audit),
    // As the CA function: the audit log read back for a takeover's replacement.
    ...(options.readsSignatures ? { signatures: log } : {}),
  });
}

beforeAll(async () => {
  hsm = await connectHsm(config.hsm, config.aws);
  doc = documentClient(config.aws);
  tables = await createTestTables(['certificates', 'audit']);
  log = new AuditLog(new AuditRepository(doc, { tableName: tables.audit }), { chains: CHAINS });
  const stored = await caCertificateStore(caConfig.certsSource, config.aws).read();
  if (!stored) throw new Error('no CA certificates: run `bash scripts/bootstrap.sh`');
  caCerts = stored;
  ca = await newCa();
});

afterAll(async () => {
  for (const key of keys) await hsm.destroy(key);
  await hsm?.close();
  doc?.destroy();
});

async function issueFor(keyType: KeyType, signer: SignerIdentity = IDENTITY) {
  const { csrDer, spki, key } = await keyAndCsr(hsm, keyType, keys, signer);
  const evidence = evidenceFor({ keyType, signer });
  const issued = await ca.issue({ ...evidence, csrDer });
  return { issued, request: { id: evidence.requestId }, evidence, csrDer, spki, key };
}

/** The refusal an issuance ends in (or undefined), and the CA's audit event for it. */
async function refusalOf(promise: Promise<unknown>): Promise<{ error: unknown; audited: AuditEvent[] }> {
  const before = events.length;
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, audited: events.slice(before).filter((e) => e.type === 'certificate.refused') };
}

/** The same public key in another encoding: an EC point compressed, an RSA key without NULL parameters. */
function reencoded(spki: Buffer): Buffer {
  const info = AsnConvert.parse(spki, SubjectPublicKeyInfo);
  if (info.algorithm.algorithm === id_rsaEncryption) {
    info.algorithm = new AlgorithmIdentifier({ algorithm: id_rsaEncryption });
  } else {
    const point = ECDH.convertKey(
      Buffer.from(info.subjectPublicKey),
      'prime256v1',
      undefined,
      undefined,
      'compressed',
    );
    info.subjectPublicKey = new Uint8Array(point as Buffer).buffer;
  }
  return Buffer.from(AsnConvert.serialize(info));
}

function text(certificatePem: string): string {
  return openssl(['x509', '-in', 'c.pem', '-noout', '-text', '-nameopt', 'utf8,sep_comma_plus_space'], {
    'c.pem': certificatePem,
  });
}

describe.each<KeyType>(['RSA-2048', 'RSA-3072', 'EC-P256', 'EC-P384'])(
  'a leaf for a %s one-time key',
  (keyType) => {
    let result: Awaited<ReturnType<typeof issueFor>>;
    beforeAll(async () => {
      result = await issueFor(keyType);
    });

    it('verifies with openssl verify -CAfile root.pem -untrusted issuing.pem', () => {
      const { issued } = result;
      expect(issued.chainPem).toEqual([caCerts.issuingPem, caCerts.rootPem]);
      const verdict = opensslVerifyChain({
        rootPem: issued.chainPem[1],
        intermediatePems: [issued.chainPem[0]],
        leafPem: issued.certificatePem,
      });
      expect(verdict.output).toContain('leaf.pem: OK');
      expect(verdict.ok).toBe(true);
    });

    it('parses with Node X509Certificate, verifies with the issuing CA key, and certifies the CSR key', () => {
      const { issued, spki } = result;
      const leaf = new X509Certificate(issued.certificatePem);
      const issuing = new X509Certificate(caCerts.issuingPem);
      const root = new X509Certificate(caCerts.rootPem);
      expect(leaf.verify(issuing.publicKey)).toBe(true);
      expect(leaf.verify(root.publicKey)).toBe(false);
      expect(leaf.checkIssued(issuing)).toBe(true);
      expect(leaf.ca).toBe(false);
      expect(leaf.publicKey.export({ type: 'spki', format: 'der' }).equals(spki)).toBe(true);
      expect(leaf.serialNumber.toLowerCase().replace(/^00/, '')).toBe(issued.serialHex);
      expect(issued.serialHex).toMatch(/^[0-9a-f]{32}$/);
    });

    it('shows the natural-person profile in openssl x509 -text', () => {
      const out = text(result.issued.certificatePem);
      expect(out).toContain('Version: 3 (0x2)');
      expect(out).toContain(
        'Subject: C=SE, SN=Öberg-Nilsson, GN=Åsa, serialNumber=197001011234, CN=Åsa Öberg-Nilsson',
      );
      expect(out).toContain(
        `Signature Algorithm: ${caConfig.keyType === 'EC-P384' ? 'ecdsa-with-SHA384' : 'sha256WithRSAEncryption'}`,
      );
      expect(out).toMatch(/X509v3 Key Usage: critical\s+Non Repudiation\n/);
      expect(out).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE/);
      expect(out).toMatch(/X509v3 Certificate Policies:\s+Policy: [\d.]+/);
      expect(out).toContain(`Policy: ${caConfig.policyOid}`);
      expect(out).toContain('X509v3 Subject Key Identifier');
      expect(out).toContain('X509v3 Authority Key Identifier');
      expect(out).toContain(`URI:${caConfig.pkiBaseUrl}/issuing.crl`);
      expect(out).toContain(`OCSP - URI:${caConfig.pkiBaseUrl}/ocsp`);
      expect(out).toContain(`CA Issuers - URI:${caConfig.pkiBaseUrl}/issuing.crt`);
      const leaf = new X509Certificate(result.issued.certificatePem);
      const days = (Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 86_400_000;
      expect(days).toBeCloseTo(caConfig.leafValidityDays, 0);
    });

    it('encodes country and serialNumber as PrintableString and names as UTF8String', () => {
      const der = new X509Certificate(result.issued.certificatePem).raw;
      const out = openssl(['asn1parse', '-inform', 'DER', '-in', 'c.der'], { 'c.der': der });
      const lines = out.split('\n');
      const typeAfter = (attribute: string): string => {
        const subjectLines = lines.slice(lines.map((l) => l.includes(':countryName')).lastIndexOf(true));
        const i = subjectLines.findIndex((l) => l.includes(`:${attribute}`));
        return /prim: (\w+)/.exec(subjectLines[i + 1])![1];
      };
      expect(typeAfter('countryName')).toBe('PRINTABLESTRING');
      expect(typeAfter('serialNumber')).toBe('PRINTABLESTRING');
      expect(typeAfter('surname')).toBe('UTF8STRING');
      expect(typeAfter('givenName')).toBe('UTF8STRING');
      expect(typeAfter('commonName')).toBe('UTF8STRING');
    });

    it('records the issuance by request and by serial', async () => {
      const { issued, request, spki } = result;
      const byRequest = await doc.send(
        new GetCommand({ TableName: tables.certificates, Key: { pk: `REQ#${request.id}` } }),
      );
      const bySerial = await doc.send(
        new GetCommand({ TableName: tables.certificates, Key: { pk: `SERIAL#${issued.serialHex}` } }),
      );
      expect(byRequest.Item).toMatchObject({
        serialHex: issued.serialHex,
        requestId: request.id,
        certificatePem: issued.certificatePem,
        publicKeyHash: createHash('sha256').update(spki).digest('hex'),
      });
      expect(bySerial.Item).toMatchObject({
        requestId: request.id,
        subjectHash: byRequest.Item!.subjectHash,
      });
      const leaf = new X509Certificate(issued.certificatePem);
      expect(bySerial.Item!.notAfter).toBe(Date.parse(leaf.validTo));
      expect(bySerial.Item!.notBefore).toBe(Date.parse(leaf.validFrom));
      expect(JSON.stringify(bySerial.Item)).not.toContain('197001011234');
    });
  },
);

describe('issuance rules', () => {
  it('takes the subject from the verified assertion; a CSR naming anyone else is refused', async () => {
    const victim: SignerIdentity = {
      commonName: 'Karl Svensson',
      givenName: 'Karl',
      surname: 'Svensson',
      serialNumber: '198002021234',
      country: 'SE',
    };
    const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys, victim);
    const evidence = evidenceFor();
    const { error, audited } = await refusalOf(ca.issue({ ...evidence, csrDer }));
    expect(error).toBeInstanceOf(SignerMismatchError);
    expect(audited).toEqual([
      expect.objectContaining({ requestId: evidence.requestId, code: 'SIGNER_MISMATCH' }),
    ]);
    const { issued } = await issueFor('EC-P256');
    const subject = new X509Certificate(issued.certificatePem).subject;
    expect(subject).toContain('serialNumber=197001011234');
    expect(subject).not.toContain('Svensson');
  });

  it.each<[string, Parameters<typeof evidenceFor>[0], string]>([
    [
      'a token bound to another digest',
      { binding: { digest: Buffer.alloc(32, 9).toString('base64') } },
      'ASSERTION_BINDING_MISMATCH',
    ],
    [
      'a token bound to another format',
      { binding: { format: 'cms', profile: 'CAdES-B-B' } },
      'ASSERTION_BINDING_MISMATCH',
    ],
    [
      'a token bound to another algorithm',
      { binding: { signatureAlgorithm: 'RSASSA-PSS' } },
      'ASSERTION_BINDING_MISMATCH',
    ],
    [
      'a token issued longer ago than a request may wait',
      {
        claims: {
          iat: Math.floor(Date.now() / 1000) - 3600,
          auth_time: Math.floor(Date.now() / 1000) - 3600,
          exp: Math.floor(Date.now() / 1000) - 3000,
        },
      },
      'ASSERTION_STALE',
    ],
    [
      'a token minted from an old session',
      { claims: { auth_time: Math.floor(Date.now() / 1000) - 120 } },
      'ASSERTION_LOGIN_NOT_FRESH',
    ],
    [
      'a token of an untrusted issuer',
      { claims: { iss: 'https://evil.example' } },
      'ASSERTION_ISSUER_UNTRUSTED',
    ],
    ['a token for another audience', { claims: { aud: 'other-service' } }, 'ASSERTION_AUDIENCE_MISMATCH'],
    [
      'a token below the level of assurance',
      { claims: { acr: 'http://id.elegnamnden.se/loa/1.0/loa2' } },
      'ASSERTION_LOA_INSUFFICIENT',
    ],
    ['a DN injection in a name claim', { claims: { name: 'Eve, CN=Root CA' } }, 'ASSERTION_CLAIMS_INVALID'],
  ])('refuses %s, signs nothing, and audits the refusal', async (_what, options, code) => {
    const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys);
    const evidence = evidenceFor(options);
    const { error, audited } = await refusalOf(ca.issue({ ...evidence, csrDer }));
    expect(error).toBeInstanceOf(AssertionError);
    expect((error as AssertionError).code).toBe(code);
    expect(audited).toEqual([expect.objectContaining({ requestId: evidence.requestId, code })]);
    const stored = await doc.send(
      new GetCommand({ TableName: tables.certificates, Key: { pk: `REQ#${evidence.requestId}` } }),
    );
    expect(stored.Item).toBeUndefined();
  });

  it('refuses a forged or missing assertion', async () => {
    const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys);
    const evidence = evidenceFor();
    const [h, p, sig] = evidence.assertion.split('.');
    const forged = `${h}.${p}.${sig.slice(0, -4)}${sig.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    const bad = await refusalOf(ca.issue({ ...evidence, assertion: forged, csrDer }));
    expect((bad.error as AssertionError).code).toBe('ASSERTION_SIGNATURE_INVALID');
    const none = await refusalOf(
      ca.issue({ ...evidence, assertion: undefined as unknown as string, csrDer }),
    );
    expect((none.error as AssertionError).code).toBe('IDENTITY_ASSERTION_REQUIRED');
  });

  it('an assertion serves one request: used for another request id it is refused', async () => {
    const first = await issueFor('EC-P256');
    const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys);
    // The same token presented for another request: its nonce binds the first request id.
    const otherId = evidenceFor();
    const rebound = await refusalOf(ca.issue({ ...otherId, assertion: first.evidence.assertion, csrDer }));
    expect((rebound.error as AssertionError).code).toBe('ASSERTION_BINDING_MISMATCH');
    // The same token and binding, under a request id that is not the one bound: not a request.
    const renamed = await refusalOf(ca.issue({ ...first.evidence, requestId: otherId.requestId, csrDer }));
    expect(renamed.error).toBeInstanceOf(RequestUnknownError);
    // The register: an assertion already certified for request A, presented again for A by another
    // attempt while A's certificate is being replaced, is fine; for any other request it is refused.
    const certificates = new CertificateRepository(doc, { tableName: tables.certificates });
    const [state] = await certificates.lookup([
      { requestId: 'some-other-request', assertionKey: 'x', publicKeyHash: 'y' },
    ]);
    expect(state).toEqual({});
  });

  it('a public key is certified once: the same key for another request is refused', async () => {
    const first = await issueFor('EC-P256');
    const { buildCsr } = await import('@pipeline/der');
    const again = await buildCsr({
      subject: IDENTITY,
      keyType: 'EC-P256',
      publicKeySpki: first.spki,
      sign: (d, o) => hsm.signDigest(first.key, d, o),
    });
    const evidence = evidenceFor();
    const { error, audited } = await refusalOf(ca.issue({ ...evidence, csrDer: again }));
    expect(error).toBeInstanceOf(PublicKeyAlreadyCertifiedError);
    expect((error as PublicKeyAlreadyCertifiedError).code).toBe('PUBLIC_KEY_ALREADY_CERTIFIED');
    expect(audited).toEqual([
      expect.objectContaining({
        requestId: evidence.requestId,
        code: 'PUBLIC_KEY_ALREADY_CERTIFIED',
        keySpkiHash: createHash('sha256').update(first.spki).digest('hex'),
      }),
    ]);
  });

  it.each<KeyType>(['EC-P256', 'RSA-2048'])(
    'a %s key is certified once whatever its encoding: re-encoded, it is refused PUBLIC_KEY_NOT_CANONICAL under its own hash',
    async (keyType) => {
      const { buildCsr } = await import('@pipeline/der');
      const csrOf = (spki: Buffer, key: PrivateKeyRef) =>
        buildCsr({
          subject: IDENTITY,
          keyType,
          publicKeySpki: spki,
          sign: (d, o) => hsm.signDigest(key, d, o),
        });
      const certifiedHash = (spki: Buffer) => createHash('sha256').update(spki).digest('hex');
      // A certified key, presented again re-encoded (the compressed point, RSA without NULL) for another
      // request: the CSR's signature verifies, its bytes hash as a new key, and the CA refuses it.
      const first = await issueFor(keyType);
      const copy = reencoded(first.spki);
      expect(copy.length).toBe(keyType === 'EC-P256' ? 59 : 292);
      const evidence = evidenceFor({ keyType });
      // Refused before the CA's first await: its audit event is appended before ca.issue returns.
      const refusal = (issuing: () => Promise<unknown>) => refusalOf(Promise.resolve().then(issuing));
      const csr = await csrOf(copy, first.key);
      const { error, audited } = await refusal(() => ca.issue({ ...evidence, csrDer: csr }));
      expect(error).toBeInstanceOf(PublicKeyNotCanonicalError);
      expect((error as PublicKeyNotCanonicalError).code).toBe('PUBLIC_KEY_NOT_CANONICAL');
      expect(audited).toEqual([
        expect.objectContaining({
          requestId: evidence.requestId,
          code: 'PUBLIC_KEY_NOT_CANONICAL',
          keySpkiHash: certifiedHash(first.spki),
        }),
      ]);
      // A key never certified, re-encoded: refused as well (the register keys on the canonical form only).
      const fresh = await keyAndCsr(hsm, keyType, keys);
      const other = evidenceFor({ keyType });
      const freshCsr = await csrOf(reencoded(fresh.spki), fresh.key);
      const refused = await refusal(() => ca.issue({ ...other, csrDer: freshCsr }));
      expect(refused.error).toBeInstanceOf(PublicKeyNotCanonicalError);
      expect(refused.audited).toEqual([
        expect.objectContaining({ code: 'PUBLIC_KEY_NOT_CANONICAL', keySpkiHash: certifiedHash(fresh.spki) }),
      ]);
      const [state] = await new CertificateRepository(doc, { tableName: tables.certificates }).lookup([
        { requestId: other.requestId, assertionKey: '-', publicKeyHash: certifiedHash(fresh.spki) },
      ]);
      expect(state).toEqual({});
      // In its canonical encoding, the same fresh key is certified, once.
      const issued = await ca.issue({ ...other, csrDer: fresh.csrDer });
      expect(
        new X509Certificate(issued.certificatePem).publicKey.export({ type: 'spki', format: 'der' }),
      ).toEqual(fresh.spki);
    },
  );

  it('refuses a CSR whose signature does not match its public key, and records nothing', async () => {
    const victim = await keyAndCsr(hsm, 'EC-P256', keys);
    const attacker = await hsm.generateKeyPair('EC-P256', { extractable: false });
    keys.push(attacker.privateKey);
    const { buildCsr } = await import('@pipeline/der');
    const forged = await buildCsr({
      subject: IDENTITY,
      keyType: 'EC-P256',
      publicKeySpki: victim.spki,
      sign: (d, o) => hsm.signDigest(attacker.privateKey, d, o),
    });
    const evidence = evidenceFor();
    const error = await ca.issue({ ...evidence, csrDer: forged }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CsrSignatureInvalidError);
    expect((error as CsrSignatureInvalidError).code).toBe('CSR_SIGNATURE_INVALID');
    const stored = await doc.send(
      new GetCommand({ TableName: tables.certificates, Key: { pk: `REQ#${evidence.requestId}` } }),
    );
    expect(stored.Item).toBeUndefined();
  });

  it('refuses bytes that are not a CSR', async () => {
    await expect(ca.issue({ ...evidenceFor(), csrDer: Buffer.from('30820001ff', 'hex') })).rejects.toThrow(
      BadCsrError,
    );
  });

  it('refuses a request id that is none, or not the one the assertion binds', async () => {
    const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys);
    const evidence = evidenceFor();
    for (const requestId of ['no-such-request', '', 'x'.repeat(5000)]) {
      const error = await ca.issue({ ...evidence, requestId, csrDer }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RequestUnknownError);
      expect((error as RequestUnknownError).code).toBe('REQUEST_UNKNOWN');
    }
  });

  it('refuses a CSR key of another type than the assertion binds', async () => {
    const { csrDer } = await keyAndCsr(hsm, 'EC-P384', keys);
    await expect(ca.issue({ ...evidenceFor({ keyType: 'EC-P256' }), csrDer })).rejects.toThrow(
      KeyMismatchError,
    );
  });

  it('returns the same certificate on a retry with the same CSR or the same key, refuses another key', async () => {
    const first = await keyAndCsr(hsm, 'EC-P256', keys);
    const evidence = evidenceFor();
    const issued = await ca.issue({ ...evidence, csrDer: first.csrDer });
    expect(await ca.issue({ ...evidence, csrDer: first.csrDer })).toEqual(issued);

    // A new CSR from the same key (ECDSA: different signature bytes) is the same key: same certificate.
    const { buildCsr } = await import('@pipeline/der');
    const again = await buildCsr({
      subject: IDENTITY,
      keyType: 'EC-P256',
      publicKeySpki: first.spki,
      sign: (d, o) => hsm.signDigest(first.key, d, o),
    });
    expect(again.equals(first.csrDer)).toBe(false);
    expect(await ca.issue({ ...evidence, csrDer: again })).toEqual(issued);

    const other = await keyAndCsr(hsm, 'EC-P256', keys);
    const error = await ca.issue({ ...evidence, csrDer: other.csrDer }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AlreadyCertifiedError);
    expect((error as AlreadyCertifiedError).code).toBe('ALREADY_CERTIFIED');
  });

  it('records the certificate released to its attempt: without the audit log read back, a takeover after a crash gets no second one, nothing revoked', async () => {
    const first = await keyAndCsr(hsm, 'EC-P256', keys);
    const second = await keyAndCsr(hsm, 'EC-P256', keys);
    const evidence = evidenceFor();
    const before = Date.now();
    const issued = await ca.issue({ ...evidence, csrDer: first.csrDer, attemptId: 'attempt-1' });
    const certificates = new CertificateRepository(doc, { tableName: tables.certificates });
    const recorded = (await certificates.getByRequest(evidence.requestId))!;
    expect(recorded).toMatchObject({ serialHex: issued.serialHex, attemptId: 'attempt-1' });
    expect(recorded.releasedAt).toBeGreaterThanOrEqual(before);
    // attempt-1 dies between its certificate and its signature; attempt-2 takes the request over with a
    // new key (and the request's own assertion): refused, as is any other caller.
    const issuedBefore = events.filter((e) => e.type === 'certificate.issued').length;
    for (const attemptId of ['attempt-2', 'attempt-1', undefined]) {
      const refused = await ca.issue({ ...evidence, csrDer: second.csrDer, attemptId }).catch((e) => e);
      expect(refused).toBeInstanceOf(AlreadyCertifiedError);
    }
    expect(events.filter((e) => e.type === 'certificate.issued')).toHaveLength(issuedBefore);
    expect(await certificates.getByRequest(evidence.requestId)).toEqual(recorded);
    const serial = await certificates.getBySerial(issued.serialHex);
    expect(serial).toMatchObject({ requestId: evidence.requestId });
    expect(serial?.supersededBy).toBeUndefined();
    expect(
      (await certificates.statuses([issued.serialHex])).get(issued.serialHex)?.revocation,
    ).toBeUndefined();
    // The new key was never certified: it may serve another request.
    expect(
      await certificates.lookup([
        {
          requestId: 'x',
          assertionKey: 'x',
          publicKeyHash: createHash('sha256').update(second.spki).digest('hex'),
        },
      ]),
    ).toEqual([{}]);
    // The owner's retry still gets its certificate.
    expect(await ca.issue({ ...evidence, csrDer: first.csrDer, attemptId: 'attempt-1' })).toEqual(issued);
  });

  describe('a takeover whose certificate signed nothing that left the service (the audit log read back)', () => {
    let replacing: CertificateAuthority;
    let certificates: CertificateRepository;
    beforeAll(async () => {
      replacing = await newCa({}, { readsSignatures: true });
      certificates = new CertificateRepository(doc, { tableName: tables.certificates });
    });

    /** A request certified for attempt-1, which then died (nothing it did reached the log but the CA's event). */
    async function crashed() {
      const evidence = evidenceFor();
      const first = await keyAndCsr(hsm, 'EC-P256', keys);
      const issued = await replacing.issue({ ...evidence, csrDer: first.csrDer, attemptId: 'attempt-1' });
      return { evidence, first, issued };
    }

    const auditEvents = async () =>
      eventsOf(await new AuditRepository(doc, { tableName: tables.audit }).readAll());

    it('a replacement, the first serial revoked superseded in the same transaction as the new certificate and both events', async () => {
      const { evidence, issued, first } = await crashed();
      const second = await keyAndCsr(hsm, 'EC-P256', keys);
      const carriedBefore = carrying.length;
      const replaced = await replacing.issue({ ...evidence, csrDer: second.csrDer, attemptId: 'attempt-2' });
      expect(replaced.serialHex).not.toBe(issued.serialHex);
      // One transaction: the revocation's and the issuance's events, the five items (the old serial's update).
      const writes = carrying.slice(carriedBefore).filter((c) => c.outcome.written);
      expect(writes).toHaveLength(1);
      expect(writes[0].events).toEqual([
        {
          type: 'certificate.revoked',
          serial: issued.serialHex,
          reason: 'superseded',
          requestId: evidence.requestId,
        },
        expect.objectContaining({ type: 'certificate.issued', serial: replaced.serialHex }),
      ]);
      expect(writes[0].carried.map((g) => g.length)).toEqual([5]);
      expect(await certificates.getByRequest(evidence.requestId)).toMatchObject({
        serialHex: replaced.serialHex,
        attemptId: 'attempt-2',
        supersedes: issued.serialHex,
        replacements: 1,
      });
      // Revoked as the revocation function records it: OCSP and the next CRL show it, reason superseded.
      const status = await certificates.statuses([issued.serialHex, replaced.serialHex]);
      expect(status.get(issued.serialHex)?.revocation).toMatchObject({
        reason: 'superseded',
        revokedBy: 'ca',
      });
      expect(status.get(replaced.serialHex)?.revocation).toBeUndefined();
      expect(await certificates.getBySerial(issued.serialHex)).toMatchObject({
        supersededBy: replaced.serialHex,
      });
      expect(
        (await certificates.revokedUnexpired(Date.now())).map((e) => [e.serialHex, e.reason]),
      ).toContainEqual([issued.serialHex, 'superseded']);
      // The log (read back from its table) has exactly two issuances for the request, the revocation between.
      const logged = (await auditEvents()).filter(
        (e) => 'requestId' in e && e.requestId === evidence.requestId && e.type !== 'certificate.refused',
      );
      expect(logged.map((e) => [e.type, 'serial' in e ? e.serial : undefined])).toEqual([
        ['certificate.issued', issued.serialHex],
        ['certificate.revoked', issued.serialHex],
        ['certificate.issued', replaced.serialHex],
      ]);
      // The replacement's own retry gets it back; a third attempt (the second died too) replaces it.
      expect(await replacing.issue({ ...evidence, csrDer: second.csrDer, attemptId: 'attempt-2' })).toEqual(
        replaced,
      );
      const third = await keyAndCsr(hsm, 'EC-P256', keys);
      const again = await replacing.issue({ ...evidence, csrDer: third.csrDer, attemptId: 'attempt-3' });
      expect(await certificates.getByRequest(evidence.requestId)).toMatchObject({
        serialHex: again.serialHex,
        supersedes: replaced.serialHex,
        replacements: 2,
      });
      expect(
        (await certificates.statuses([replaced.serialHex])).get(replaced.serialHex)?.revocation,
      ).toMatchObject({ reason: 'superseded' });
      // The dead attempt's key stays certified once: it cannot come back for anything.
      await expect(replacing.issue({ ...evidenceFor(), csrDer: first.csrDer })).rejects.toBeInstanceOf(
        PublicKeyAlreadyCertifiedError,
      );
      // The log still verifies.
      const stored = await new AuditRepository(doc, { tableName: tables.audit }).readAll();
      expect(verifyAuditLog({ ...stored, chains: CHAINS }, undefined).intact).toBe(true);
    });

    it('a signature.made for the request in the log: refused, nothing revoked', async () => {
      const { evidence, issued, first } = await crashed();
      // attempt-1 signed and logged it before it died (its result may have been stored and read).
      await log.append(
        signatureMadeEvent({
          requestId: evidence.requestId,
          signature: Buffer.from('sig'),
          publicKeySpki: first.spki,
        }),
      );
      const second = await keyAndCsr(hsm, 'EC-P256', keys);
      await expect(
        replacing.issue({ ...evidence, csrDer: second.csrDer, attemptId: 'attempt-2' }),
      ).rejects.toMatchObject({
        code: 'ALREADY_CERTIFIED',
        message: expect.stringContaining('a signature was made'),
      });
      expect((await certificates.getByRequest(evidence.requestId))?.serialHex).toBe(issued.serialHex);
      expect(
        (await certificates.statuses([issued.serialHex])).get(issued.serialHex)?.revocation,
      ).toBeUndefined();
    });

    it('a certificate its client revoked is never replaced: the revocation stays as it was', async () => {
      const { evidence, issued } = await crashed();
      await certificates.revoke(issued.serialHex, {
        revokedAt: Date.now(),
        reason: 'keyCompromise',
        revokedBy: 'client-a',
      });
      const second = await keyAndCsr(hsm, 'EC-P256', keys);
      await expect(
        replacing.issue({ ...evidence, csrDer: second.csrDer, attemptId: 'attempt-2' }),
      ).rejects.toBeInstanceOf(AlreadyCertifiedError);
      expect(
        (await certificates.statuses([issued.serialHex])).get(issued.serialHex)?.revocation,
      ).toMatchObject({
        reason: 'keyCompromise',
        revokedBy: 'client-a',
      });
      expect(await certificates.getByRequest(evidence.requestId)).not.toHaveProperty('supersedes');
    });

    it('two takeovers at once: one replacement wins, the other is refused; the first serial revoked once', async () => {
      const { evidence, issued } = await crashed();
      const [a, b] = await Promise.all([keyAndCsr(hsm, 'EC-P256', keys), keyAndCsr(hsm, 'EC-P256', keys)]);
      const results = await Promise.allSettled([
        replacing.issue({ ...evidence, csrDer: a.csrDer, attemptId: 'attempt-2' }),
        replacing.issue({ ...evidence, csrDer: b.csrDer, attemptId: 'attempt-3' }),
      ]);
      const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      expect(won).toHaveLength(1);
      expect(lost).toEqual([expect.any(AlreadyCertifiedError)]);
      expect(await certificates.getByRequest(evidence.requestId)).toMatchObject({
        serialHex: won[0].serialHex,
        supersedes: issued.serialHex,
      });
      const revoked = (await auditEvents()).filter(
        (e) => e.type === 'certificate.revoked' && e.serial === issued.serialHex,
      );
      expect(revoked).toHaveLength(1);
      const issuedFor = (await auditEvents()).filter(
        (e) => e.type === 'certificate.issued' && e.requestId === evidence.requestId,
      );
      expect(issuedFor.map((e) => (e as CertificateIssuedEvent).serial)).toEqual([
        issued.serialHex,
        won[0].serialHex,
      ]);
    });
  });

  it('lets exactly one of two concurrent issuances with different keys win', async () => {
    const a = await keyAndCsr(hsm, 'EC-P256', keys);
    const b = await keyAndCsr(hsm, 'EC-P256', keys);
    const evidence = evidenceFor();
    const results = await Promise.allSettled([
      ca.issue({ ...evidence, csrDer: a.csrDer }),
      ca.issue({ ...evidence, csrDer: b.csrDer }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0].reason).toBeInstanceOf(AlreadyCertifiedError);
  });

  it('never repeats a serial', async () => {
    const serials = new Set<string>();
    for (let i = 0; i < 10; i++) serials.add((await issueFor('EC-P256')).issued.serialHex);
    expect(serials.size).toBe(10);
  });

  it('points relying parties at the CRL, the OCSP responder and the issuing CA certificate under PKI_BASE_URL', async () => {
    const withUrls = await newCa({ pkiBaseUrl: 'http://pki.example.test/se' });
    const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys);
    const issued = await withUrls.issue({ ...evidenceFor(), csrDer });
    const out = text(issued.certificatePem);
    expect(out).toMatch(
      /X509v3 CRL Distribution Points:\s+Full Name:\s+URI:http:\/\/pki\.example\.test\/se\/issuing\.crl/,
    );
    expect(out).toContain('CA Issuers - URI:http://pki.example.test/se/issuing.crt');
    expect(out).toContain('OCSP - URI:http://pki.example.test/se/ocsp');
    expect(out).toMatch(/X509v3 Certificate Policies:\s+Policy: 1\.3\.6\.1\.4\.1\.32473\.1\.1/);
    expect(
      opensslVerifyChain({
        rootPem: caCerts.rootPem,
        intermediatePems: [caCerts.issuingPem],
        leafPem: issued.certificatePem,
      }).ok,
    ).toBe(true);
  });
});

describe('CA keys and certificates', () => {
  it('keeps both CA private keys on the token, sensitive and never extractable (read through PKCS#11)', async () => {
    for (const label of [caConfig.rootKeyLabel, caConfig.issuingKeyLabel]) {
      const key = await findCaKey(hsm, label, caConfig.keyType);
      expect(key).toBeDefined();
      const attributes = await hsm.keyAttributes(key!.ref);
      expect(attributes).toEqual({ token: true, sensitive: true, extractable: false, sign: true, label });
    }
  });

  it('refuses to start when the certificates do not match the issuing key', async () => {
    await expect(
      CertificateAuthority.create({
        hsm,
        certificates: new CertificateRepository(doc, { tableName: tables.certificates }),
        logged: new LoggedCertificateRepository(
          new CertificateRepository(doc, { tableName: tables.certificates }),
          audit,
        ),
        caCertificates: { rootPem: caCerts.rootPem, issuingPem: caCerts.rootPem },
        config: caConfig,
        evidence: directAssertionVerifier(),
      }),
    ).rejects.toThrow(CaNotReadyError);
    await expect(
      CertificateAuthority.create({
        hsm,
        certificates: new CertificateRepository(doc, { tableName: tables.certificates }),
        logged: new LoggedCertificateRepository(
          new CertificateRepository(doc, { tableName: tables.certificates }),
          audit,
        ),
        caCertificates: { rootPem: caCerts.issuingPem, issuingPem: caCerts.rootPem },
        config: caConfig,
        evidence: directAssertionVerifier(),
      }),
    ).rejects.toThrow(CaNotReadyError);
  });
});

describe('batches', () => {
  it('certifies a batch, with per-item refusals and retries on the single path', async () => {
    const certificates = new CertificateRepository(doc, { tableName: tables.certificates });
    const fresh = await Promise.all(
      [0, 1, 2].map(async (i) => ({
        ...evidenceFor(),
        csrDer: (await keyAndCsr(hsm, 'EC-P256', keys)).csrDer,
        attemptId: `attempt-${i}`,
      })),
    );
    const earlier = await issueFor('EC-P256');
    const other = await keyAndCsr(hsm, 'EC-P256', keys);
    const outcomes = await ca.issueMany([
      ...fresh,
      { ...earlier.evidence, csrDer: earlier.csrDer }, // a retry: the stored certificate
      { ...fresh[0], requestId: 'no-such-request' },
      { ...fresh[0], csrDer: other.csrDer }, // the same request again, another key
      { ...fresh[1], csrDer: Buffer.from('not a csr') },
      { ...evidenceFor(), csrDer: earlier.csrDer }, // another request with a key certified before
    ]);
    const serials = outcomes.slice(0, 4).map((o) => (o.ok ? o.certificate.serialHex : o.error));
    expect(serials.every((s) => typeof s === 'string')).toBe(true);
    expect(new Set(serials).size).toBe(4);
    expect(serials[3]).toBe(earlier.issued.serialHex);
    expect(outcomes[4]).toMatchObject({ ok: false, error: expect.any(RequestUnknownError) });
    expect(outcomes[5]).toMatchObject({ ok: false, error: expect.any(AlreadyCertifiedError) });
    expect(outcomes[6]).toMatchObject({ ok: false, error: expect.any(BadCsrError) });
    expect(outcomes[7]).toMatchObject({ ok: false, error: expect.any(PublicKeyAlreadyCertifiedError) });
    // Stored as the single path stores them: the request's record names the serial it was given, released
    // to the attempt that asked.
    const states = await certificates.lookup(
      fresh.map((f) => ({ requestId: f.requestId, assertionKey: '-', publicKeyHash: '-' })),
    );
    fresh.forEach((_, i) =>
      expect(states[i].existing).toMatchObject({
        serialHex: serials[i],
        attemptId: `attempt-${i}`,
        releasedAt: expect.any(Number),
      }),
    );
    for (const o of outcomes.slice(0, 3)) {
      if (!o.ok) throw new Error('not issued');
      const leaf = new X509Certificate(o.certificate.certificatePem);
      expect(leaf.verify(new X509Certificate(caCerts.issuingPem).publicKey)).toBe(true);
    }
  });

  it('writes a batch with its audit entry in one transaction, no read first: a used key cancels it all (no item, no event of it), then each request gets its answer', async () => {
    const certificates = new CertificateRepository(doc, { tableName: tables.certificates });
    const auditStore = new AuditRepository(doc, { tableName: tables.audit });
    const earlier = await issueFor('EC-P256');
    const certified = await issueFor('EC-P256');
    const other = await keyAndCsr(hsm, 'EC-P256', keys);
    const fresh = await Promise.all(
      [0, 1].map(async () => ({ ...evidenceFor(), csrDer: (await keyAndCsr(hsm, 'EC-P256', keys)).csrDer })),
    );
    const usedKey = evidenceFor();
    const carriedBefore = carrying.length;
    const outcomes = await ca.issueMany([
      fresh[0],
      { ...earlier.evidence, csrDer: earlier.csrDer }, // a retry: the stored certificate
      { ...usedKey, csrDer: certified.csrDer }, // another request with a key certified before
      { ...earlier.evidence, csrDer: other.csrDer }, // a repeat of the retry's request: after the others
      fresh[1],
    ]);
    // One transaction for the first four (the repeat waits): refused by the retry's and the used key's
    // own items, so nothing of it was written.
    const [first, ...after] = carrying.slice(carriedBefore);
    expect(first.events.map((e) => (e as CertificateIssuedEvent).requestId)).toEqual([
      fresh[0].requestId,
      earlier.evidence.requestId,
      usedKey.requestId,
      fresh[1].requestId,
    ]);
    expect(first.outcome).toEqual({ written: false, refused: [false, true, true, false] });
    const dropped = first.events.map((e) => (e as CertificateIssuedEvent).serial);
    const stored = await auditStore.readAll();
    const logged = eventsOf(stored);
    for (const serial of dropped) {
      expect(await certificates.getBySerial(serial)).toBeUndefined();
      expect(logged.filter((e) => e.type === 'certificate.issued' && e.serial === serial)).toEqual([]);
    }
    expect(await certificates.getByRequest(fresh[0].requestId)).toMatchObject({
      serialHex: outcomes[0].ok ? outcomes[0].certificate.serialHex : 'none',
    });
    // The two fresh ones written again with new leaves, in one transaction with their events.
    expect(
      after.map((c) => [c.events.map((e) => (e as CertificateIssuedEvent).requestId), c.outcome.written]),
    ).toEqual([[[fresh[0].requestId, fresh[1].requestId], true]]);
    for (const o of [outcomes[0], outcomes[4]]) {
      if (!o.ok) throw new Error('not issued');
      expect(dropped).not.toContain(o.certificate.serialHex);
      expect(
        logged.filter((e) => e.type === 'certificate.issued' && e.serial === o.certificate.serialHex),
      ).toHaveLength(1);
    }
    // Each of the others gets the answer of the rules, a refusal audited with the leaf it dropped.
    expect(outcomes[1]).toEqual({ ok: true, certificate: earlier.issued });
    expect(outcomes[2]).toMatchObject({ ok: false, error: expect.any(PublicKeyAlreadyCertifiedError) });
    expect(outcomes[3]).toMatchObject({ ok: false, error: expect.any(AlreadyCertifiedError) });
    expect(logged).toContainEqual(
      expect.objectContaining({
        type: 'certificate.refused',
        requestId: usedKey.requestId,
        code: 'PUBLIC_KEY_ALREADY_CERTIFIED',
        serial: dropped[2],
      }),
    );
    expect(
      logged.filter((e) => e.type === 'certificate.refused' && e.requestId === earlier.evidence.requestId),
    ).toEqual([expect.objectContaining({ code: 'ALREADY_CERTIFIED' })]);
    expect(await certificates.getByRequest(earlier.evidence.requestId)).toMatchObject({
      serialHex: earlier.issued.serialHex,
    });
    // The log verifies, and every certificate stored has its event and every event its certificate.
    expect(verifyAuditLog({ ...stored, chains: CHAINS }, undefined).intact).toBe(true);
    const issued = logged.flatMap((e) => (e.type === 'certificate.issued' ? [e] : []));
    for (const e of issued) {
      expect(await certificates.getBySerial(e.serial)).toMatchObject({ requestId: e.requestId });
    }
  });

  it('two requests of one batch presenting the same assertion or key: one certificate, one refusal', async () => {
    const shared = evidenceFor();
    const a = await keyAndCsr(hsm, 'EC-P256', keys);
    const b = await keyAndCsr(hsm, 'EC-P256', keys);
    const keyTwice = evidenceFor();
    const outcomes = await ca.issueMany([
      { ...shared, csrDer: a.csrDer },
      { ...shared, csrDer: b.csrDer },
      { ...keyTwice, csrDer: (await keyAndCsr(hsm, 'EC-P256', keys)).csrDer },
    ]);
    expect(outcomes.filter((o) => o.ok)).toHaveLength(2);
    expect(outcomes[1]).toMatchObject({ ok: false, error: expect.any(AlreadyCertifiedError) });
  });
});
