/**
 * Revocation against the real SoftHSM tokens (the bootstrap's root and issuing CA keys; the OCSP
 * responder's key on its own token) and DynamoDB Local: revoked serials, CRLs signed in the HSM and OCSP
 * answers signed by the delegated responder, judged with the openssl command line (crl -verify, verify
 * -crl_check, ocsp); a revocation the records lose stays in the next CRL and in OCSP answers.
 */
import { randomBytes } from 'node:crypto';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { CertificateRepository } from '../../adapters/dynamodb/src/certificate-repository';
import { connectHsm, type Pkcs11Hsm, type PrivateKeyRef } from '@pipeline/adapters/hsm';
import { AuditLog } from '@pipeline/audit';
import { MemoryAuditStore } from '../../test-support/memory-audit-store';
import { loadCaConfig, loadConfig } from '@pipeline/config';
import { eventsOf, type RevokeOutcome } from '@pipeline/core/audit';
import type { RevocationReason } from '@pipeline/core/pki';
import { createTestTables } from '../../../scripts/local/resources';
import { runOpenssl } from '../../../scripts/local/verify/openssl';
import { caCertificateStore } from '@pipeline/adapters/parameters';
import { CertificateAuthority, OcspResponder, RevocationAuthority, revokeCertificate } from '../src';
import type { CaCertificates } from '@pipeline/core/pki';
import { caStores, evidenceFor, keyAndCsr } from './helpers';
import { directAssertionVerifier } from '../../../scripts/local/idp/direct-assertions';

const config = loadConfig(process.env);
const caConfig = loadCaConfig(process.env);
let hsm: Pkcs11Hsm;
let doc: DynamoDBDocumentClient;
let tables: { certificates: string; audit: string };
let caCerts: CaCertificates;
let ca: CertificateAuthority;
let revocation: RevocationAuthority;
let ocspHsm: Pkcs11Hsm;
let responder: OcspResponder;
/** What the tests "publish": the responder reads the issuing CRL from here. */
let publishedCrl: Buffer | undefined;
let auditStore: MemoryAuditStore;
let revoke: (serial: string, reason: RevocationReason, by: string) => Promise<RevokeOutcome>;
const keys: PrivateKeyRef[] = [];

beforeAll(async () => {
  hsm = await connectHsm(config.hsm, config.aws);
  doc = documentClient(config.aws);
  tables = await createTestTables(['certificates', 'audit']);
  caCerts = (await caCertificateStore(caConfig.certsSource, config.aws).read())!;
  const stores = caStores(doc, tables);
  const { certificates } = stores;
  ca = await CertificateAuthority.create({
    hsm,
    evidence: directAssertionVerifier(),
    ...stores,
    caCertificates: caCerts,
    config: caConfig,
  });
  auditStore = new MemoryAuditStore();
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
    publishedCrl: async () => publishedCrl,
    crlRefreshMs: 0,
  });
  revoke = (serial, reason, by) =>
    revokeCertificate(
      { store: certificates, audit: new AuditLog(auditStore, { chains: 2 }) },
      serial,
      reason,
      by,
    );
});

afterAll(async () => {
  for (const key of keys) await hsm.destroy(key);
  await hsm?.close();
  await ocspHsm?.close();
  doc?.destroy();
});

const respondOcsp = async (request: Buffer): Promise<Buffer> => (await responder.respond(request)).der;

async function issue(): Promise<{ pem: string; serial: string; requestId: string }> {
  const { csrDer } = await keyAndCsr(hsm, 'EC-P256', keys);
  const evidence = evidenceFor();
  const issued = await ca.issue({ ...evidence, csrDer });
  return { pem: issued.certificatePem, serial: issued.serialHex, requestId: evidence.requestId };
}

const crlPem = (der: Buffer): string =>
  `-----BEGIN X509 CRL-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END X509 CRL-----\n`;

/** An OCSP request for `leafPem` as a relying party's openssl builds it. */
function ocspRequest(leafPem: string, nonce = true): Buffer {
  const built = runOpenssl(
    [
      'ocsp',
      '-issuer',
      'issuing.pem',
      '-cert',
      'leaf.pem',
      nonce ? '-nonce' : '-no_nonce',
      '-reqout',
      'req.der',
    ],
    { 'issuing.pem': caCerts.issuingPem, 'leaf.pem': leafPem },
    ['req.der'],
  );
  expect(built.ok).toBe(true);
  return built.outputs['req.der'];
}

/**
 * `openssl ocsp -reqin -respin`: the response verified against the chain (the delegated responder's
 * certificate must chain to the root and carry OCSP signing), its nonce checked against the request's.
 */
function readOcspResponse(requestDer: Buffer, responseDer: Buffer) {
  return runOpenssl(
    ['ocsp', '-reqin', 'req.der', '-respin', 'resp.der', '-CAfile', 'chain.pem', '-resp_text'],
    {
      'req.der': requestDer,
      'resp.der': responseDer,
      'chain.pem': `${caCerts.rootPem}${caCerts.issuingPem}`,
    },
  );
}

test('a fresh certificate is good, a revoked one revoked with reason and time, a serial never issued unauthorized; responses verify', async () => {
  const fresh = await issue();
  const request = ocspRequest(fresh.pem);
  const good = readOcspResponse(request, await respondOcsp(request));
  expect(good.stderr).toContain('Response verify OK');
  expect(good.stdout).toMatch(/Cert Status: good/);
  // The nonce is not echoed (RFC 8954): a fresh nonce must not buy a fresh signature.
  expect(good.stdout).not.toMatch(/OCSP Nonce/);

  const revoked = await issue();
  const outcome = await revoke(revoked.serial, 'keyCompromise', 'operator');
  expect(outcome.outcome).toBe('revoked');
  const revokedRequest = ocspRequest(revoked.pem);
  const answer = readOcspResponse(revokedRequest, await respondOcsp(revokedRequest));
  expect(answer.stderr).toContain('Response verify OK');
  expect(answer.stdout).toMatch(/Cert Status: revoked/);
  expect(answer.stdout).toMatch(/Reason: keyCompromise/);
  expect(answer.stdout).toMatch(/Revocation Time: /);

  // A serial this CA never issued, under the same issuer: unauthorized, unsigned (costs no signature).
  const unknownRequest = runOpenssl(
    [
      'ocsp',
      '-issuer',
      'issuing.pem',
      '-serial',
      `0x${randomBytes(16).toString('hex')}`,
      '-reqout',
      'req.der',
    ],
    { 'issuing.pem': caCerts.issuingPem },
    ['req.der'],
  ).outputs['req.der'];
  const signaturesBefore = responder.signatures;
  const unknown = runOpenssl(['ocsp', '-respin', 'resp.der', '-resp_text', '-noverify'], {
    'resp.der': await respondOcsp(unknownRequest),
  });
  expect(unknown.stdout).toMatch(/Responder Error: unauthorized \(6\)/);
  expect(responder.signatures).toBe(signaturesBefore);
});

test('a response is signed once per certificate state and reused: a flood costs no signature, a revocation makes a new one', async () => {
  const leaf = await issue();
  const before = responder.signatures;
  // The first request, with a nonce: one signature, for the response every later request gets.
  const first = ocspRequest(leaf.pem, true);
  expect(readOcspResponse(first, await respondOcsp(first)).stderr).toContain('Response verify OK');
  expect(responder.signatures).toBe(before + 1);
  // Concurrent requests for a state nobody asked about yet share one signature.
  const other = await issue();
  const concurrent = await Promise.all(
    Array.from({ length: 10 }, (_, i) => responder.respond(ocspRequest(other.pem, i % 2 === 0))),
  );
  expect(new Set(concurrent.map((r) => r.der.toString('hex'))).size).toBe(1);
  expect(responder.signatures).toBe(before + 2);
  for (let i = 0; i < 50; i++) {
    const again = await responder.respond(ocspRequest(leaf.pem, i % 2 === 0));
    expect(again.cached).toBe(true);
  }
  expect(responder.signatures).toBe(before + 2);
  // A cached response carries no nonce (RFC 8954), verifies, and says good.
  const reused = runOpenssl(
    [
      'ocsp',
      '-respin',
      'resp.der',
      '-CAfile',
      'chain.pem',
      '-resp_text',
      '-issuer',
      'issuing.pem',
      '-cert',
      'leaf.pem',
    ],
    {
      'resp.der': await respondOcsp(ocspRequest(leaf.pem, true)),
      'chain.pem': `${caCerts.rootPem}${caCerts.issuingPem}`,
      'issuing.pem': caCerts.issuingPem,
      'leaf.pem': leaf.pem,
    },
  );
  expect(reused.stderr).toContain('Response verify OK');
  expect(reused.stdout).toMatch(/Cert Status: good/);
  expect(reused.stdout).not.toMatch(/OCSP Nonce/);
  // The state changes: a new response, signed once.
  await revoke(leaf.serial, 'keyCompromise', 'operator');
  const after = readOcspResponse(
    ocspRequest(leaf.pem, false),
    await respondOcsp(ocspRequest(leaf.pem, false)),
  );
  expect(after.stdout).toMatch(/Cert Status: revoked/);
  expect(responder.signatures).toBe(before + 3);
});

test('not a signing oracle: several certificates in one request are refused, serials never issued cost nothing, a SHA-256 CertID is answered', async () => {
  const leaf = await issue();
  const request = (args: string[], files: Record<string, string> = {}): Buffer =>
    runOpenssl(
      ['ocsp', '-issuer', 'issuing.pem', ...args, '-reqout', 'req.der'],
      { 'issuing.pem': caCerts.issuingPem, ...files },
      ['req.der'],
    ).outputs['req.der'];
  const status = (der: Buffer): string =>
    runOpenssl(['ocsp', '-respin', 'r.der', '-resp_text', '-noverify'], { 'r.der': der }).stdout;
  const first = await respondOcsp(ocspRequest(leaf.pem));
  expect(status(first)).toMatch(/Cert Status: good/);
  const before = responder.signatures;
  for (let i = 0; i < 20; i++) {
    // A real certificate with a fresh random serial beside it, with and without a nonce.
    const paired = request(
      [
        '-cert',
        'leaf.pem',
        '-serial',
        `0x${randomBytes(16).toString('hex')}`,
        i % 2 ? '-nonce' : '-no_nonce',
      ],
      { 'leaf.pem': leaf.pem },
    );
    expect(status(await respondOcsp(paired))).toMatch(/Responder Error: malformedrequest \(1\)/);
    // A serial never issued, alone.
    const invented = request(['-serial', `0x${randomBytes(16).toString('hex')}`, '-nonce']);
    expect(status(await respondOcsp(invented))).toMatch(/Responder Error: unauthorized \(6\)/);
  }
  // The same certificate asked twice in one request is one certificate: the cached answer.
  const twice = request(['-cert', 'leaf.pem', '-cert', 'leaf.pem'], { 'leaf.pem': leaf.pem });
  expect(await respondOcsp(twice)).toEqual(first);
  expect(responder.signatures).toBe(before);
  // A SHA-256 CertID (RFC 9654) gets a response naming it, signed once.
  const sha256 = request(['-sha256', '-cert', 'leaf.pem', '-nonce'], { 'leaf.pem': leaf.pem });
  const answered = readOcspResponse(sha256, await respondOcsp(sha256));
  expect(answered.stderr).toContain('Response verify OK');
  expect(answered.stdout).toMatch(/Hash Algorithm: sha256/);
  expect(answered.stdout).toMatch(/Cert Status: good/);
  await respondOcsp(sha256);
  expect(responder.signatures).toBe(before + 1);
});

test('revocation is monotonic: a revocation erased from the records stays in the next CRL and in OCSP answers', async () => {
  const victim = await issue();
  const other = await issue();
  await revoke(victim.serial, 'keyCompromise', 'client-a');
  const published = await revocation.issuingCrl();
  expect(published.restored).toEqual([]);
  publishedCrl = published.der;
  // Someone who can write the table undoes the revocation (and, for the second, deletes the record).
  await doc.send(
    new UpdateCommand({
      TableName: tables.certificates,
      Key: { pk: `SERIAL#${victim.serial}` },
      UpdateExpression: 'REMOVE revokedAt, revocationReason, revokedBy, revokedList',
    }),
  );
  const records = new CertificateRepository(doc, { tableName: tables.certificates });
  expect((await records.statuses([victim.serial])).get(victim.serial)?.revocation).toBeUndefined();
  // The next CRL keeps it, as published (time and reason), and says it was restored.
  const next = await revocation.issuingCrl(publishedCrl);
  expect(next.restored.map((e) => e.serialHex)).toEqual([victim.serial]);
  expect(next.number).toBeGreaterThan(published.number);
  const text = runOpenssl(['crl', '-in', 'crl.pem', '-noout', '-text', '-CAfile', 'issuing.pem'], {
    'crl.pem': crlPem(next.der),
    'issuing.pem': caCerts.issuingPem,
  });
  expect(text.stderr).toContain('verify OK');
  expect(text.stdout).toContain(`Serial Number: ${victim.serial.toUpperCase()}`);
  expect(text.stdout).toMatch(/Key Compromise/);
  // OCSP answers from the published CRL, whatever the record says.
  const answer = readOcspResponse(
    ocspRequest(victim.pem, false),
    await respondOcsp(ocspRequest(victim.pem, false)),
  );
  expect(answer.stdout).toMatch(/Cert Status: revoked/);
  expect(answer.stdout).toMatch(/Reason: keyCompromise/);
  // A CRL that is not the CA's (a forged object where the CRL is published) changes nothing.
  expect(revocation.readPublished(Buffer.from('not a crl'))).toBeUndefined();
  expect((await revocation.issuingCrl(Buffer.from('not a crl'))).restored).toEqual([]);
  const good = readOcspResponse(
    ocspRequest(other.pem, false),
    await respondOcsp(ocspRequest(other.pem, false)),
  );
  expect(good.stdout).toMatch(/Cert Status: good/);
  publishedCrl = undefined;
});

test('no nonce is echoed (openssl warns, and verifies); garbage is malformedRequest; another issuer is unauthorized', async () => {
  const leaf = await issue();
  const withNonce = ocspRequest(leaf.pem, true);
  const withoutNonce = ocspRequest(leaf.pem, false);
  // openssl checks the nonce against the request's: a missing one is a warning, a different one an error.
  const nonced = readOcspResponse(withNonce, await respondOcsp(withNonce));
  expect(nonced.stderr).toContain('WARNING: no nonce in response');
  expect(nonced.stderr).toContain('Response verify OK');
  const plain = readOcspResponse(withoutNonce, await respondOcsp(withoutNonce));
  expect(plain.stdout).not.toMatch(/OCSP Nonce/);
  expect(plain.stderr).not.toMatch(/nonce/i);
  const status = (der: Buffer): string =>
    runOpenssl(['ocsp', '-respin', 'r.der', '-resp_text', '-noverify'], { 'r.der': der }).stdout;
  expect(status(await respondOcsp(Buffer.from('not an ocsp request')))).toMatch(
    /Responder Error: malformedrequest \(1\)/,
  );
  // Asked about a certificate of another CA (the root's own, issued by itself).
  const foreign = runOpenssl(
    ['ocsp', '-issuer', 'root.pem', '-cert', 'root.pem', '-reqout', 'req.der'],
    { 'root.pem': caCerts.rootPem },
    ['req.der'],
  ).outputs['req.der'];
  expect(status(await respondOcsp(foreign))).toMatch(/Responder Error: unauthorized \(6\)/);
});

test('revocation happens once, is audited, and the CRL (signed in the HSM) lists it: openssl verify -crl_check refuses it', async () => {
  const good = await issue();
  const bad = await issue();
  const first = await revoke(bad.serial.toUpperCase(), 'affiliationChanged', 'client-a');
  expect(first).toMatchObject({ outcome: 'revoked', status: { serialHex: bad.serial } });
  const second = await revoke(bad.serial, 'keyCompromise', 'operator');
  expect(second).toMatchObject({
    outcome: 'already-revoked',
    status: { revocation: { reason: 'affiliationChanged' } },
  });
  expect(await revoke(randomBytes(16).toString('hex'), 'keyCompromise', 'operator')).toEqual({
    outcome: 'unknown',
  });
  const revokedEvents = eventsOf(await auditStore.readAll()).filter((e) => e.type === 'certificate.revoked');
  expect(revokedEvents).toContainEqual({
    type: 'certificate.revoked',
    serial: bad.serial,
    reason: 'affiliationChanged',
    requestId: bad.requestId,
  });

  const crl = await revocation.issuingCrl();
  const files = {
    'crl.pem': crlPem(crl.der),
    'chain.pem': `${caCerts.rootPem}${caCerts.issuingPem}`,
    'issuing.pem': caCerts.issuingPem,
  };
  const parsed = runOpenssl(['crl', '-in', 'crl.pem', '-noout', '-text', '-CAfile', 'issuing.pem'], files);
  expect(parsed.stderr).toContain('verify OK');
  expect(parsed.stdout).toContain(`Serial Number: ${bad.serial.toUpperCase()}`);
  expect(parsed.stdout).toMatch(/X509v3 CRL Reason Code:\s+Affiliation Changed/);
  expect(parsed.stdout).toMatch(new RegExp(`X509v3 CRL Number:\\s+${crl.number}`));
  expect(parsed.stdout).toMatch(/Next Update: /);
  const root = await revocation.rootCrl();
  const crlCheck = (leafPem: string) =>
    runOpenssl(
      [
        'verify',
        '-crl_check',
        '-CAfile',
        'chain.pem',
        '-CRLfile',
        'crl.pem',
        '-CRLfile',
        'root.crl.pem',
        'leaf.pem',
      ],
      {
        ...files,
        'root.crl.pem': crlPem(root.der),
        'leaf.pem': leafPem,
      },
    );
  expect(crlCheck(good.pem).stdout).toContain('leaf.pem: OK');
  const refused = crlCheck(bad.pem);
  expect(refused.ok).toBe(false);
  expect(`${refused.stdout}${refused.stderr}`).toMatch(/certificate revoked/);
  // CRL numbers only go up.
  expect((await revocation.issuingCrl()).number).toBeGreaterThan(crl.number);
});

test("a first issuance asking for it comes with the responder's OCSP response `good`: openssl verifies it against the chain, its fields and validity are the responder's own, and the responder still answers for later states", async () => {
  const withOcsp = await CertificateAuthority.create({
    hsm,
    evidence: directAssertionVerifier(),
    ...caStores(doc, tables),
    caCertificates: caCerts,
    config: caConfig,
    ocspAtIssuance: (serialHex) => responder.goodAtIssuance(serialHex),
  });
  const asking = {
    ...evidenceFor(),
    csrDer: (await keyAndCsr(hsm, 'EC-P256', keys)).csrDer,
    ocspResponse: true,
  };
  const plain = { ...evidenceFor(), csrDer: (await keyAndCsr(hsm, 'EC-P256', keys)).csrDer };
  const [withResponse, without] = await withOcsp.issueMany([asking, plain]);
  if (!withResponse.ok || !without.ok) throw new Error('not issued');
  // Only a request that asks for it (B-LT) costs the signature.
  expect(without.certificate.ocspResponse).toBeUndefined();
  const fromCa = Buffer.from(withResponse.certificate.ocspResponse!, 'base64');
  const leafPem = withResponse.certificate.certificatePem;
  const judged = (responseDer: Buffer) =>
    runOpenssl(
      [
        'ocsp',
        '-respin',
        'resp.der',
        '-issuer',
        'issuing.pem',
        '-cert',
        'leaf.pem',
        '-CAfile',
        'root.pem',
        '-verify_other',
        'issuing.pem',
        '-resp_text',
      ],
      {
        'resp.der': responseDer,
        'issuing.pem': caCerts.issuingPem,
        'root.pem': caCerts.rootPem,
        'leaf.pem': leafPem,
      },
    );
  const ca = judged(fromCa);
  expect(ca.stderr).toContain('Response verify OK');
  expect(ca.stdout).toMatch(/leaf\.pem: good/);
  // The responder's answer for the same certificate: the same responder, CertID, status and validity.
  const fromResponder = await respondOcsp(ocspRequest(leafPem, false));
  const responder_ = judged(fromResponder);
  expect(responder_.stderr).toContain('Response verify OK');
  const fields = (text: string) => ({
    responderId: /Responder Id: (.*)/.exec(text)?.[1],
    certId: /Certificate ID:[\s\S]*?Serial Number: \S+/.exec(text)?.[0],
    status: /Cert Status: (\S+)/.exec(text)?.[1],
    validity: (() => {
      const thisUpdate = Date.parse(/This Update: (.*)/.exec(text)![1]);
      return Date.parse(/Next Update: (.*)/.exec(text)![1]) - thisUpdate;
    })(),
    producedIsThisUpdate: /Produced At: (.*)/.exec(text)![1] === /This Update: (.*)/.exec(text)![1],
  });
  expect(fields(ca.stdout)).toEqual(fields(responder_.stdout));
  expect(fields(ca.stdout).validity).toBe(caConfig.ocspResponseValiditySeconds * 1000);
  expect(fields(ca.stdout).producedIsThisUpdate).toBe(true);
  // The responder stays the authority: revoked now, whatever the CA's response said at issuance.
  await revoke(withResponse.certificate.serialHex, 'keyCompromise', 'operator');
  expect(judged(await respondOcsp(ocspRequest(leafPem, false))).stdout).toMatch(/Cert Status: revoked/);
  // A retry of the same request gets its stored certificate back, without a response.
  const [retry] = await withOcsp.issueMany([asking]);
  if (!retry.ok) throw retry.error as Error;
  expect(retry.certificate.serialHex).toBe(withResponse.certificate.serialHex);
  expect(retry.certificate.ocspResponse).toBeUndefined();
});
