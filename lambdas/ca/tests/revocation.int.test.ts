/**
 * Revocation against the real SoftHSM token (the bootstrap's root, issuing CA and OCSP responder keys) and
 * DynamoDB Local: revoked serials, CRLs signed in the HSM and OCSP answers signed by the delegated
 * responder, judged with the openssl command line (crl -verify, verify -crl_check, ocsp).
 */
import { randomBytes } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../adapters/aws/src';
import { CertificateRepository } from '../../adapters/dynamodb/src/certificate-repository';
import { connectHsm, type Pkcs11Hsm, type PrivateKeyRef } from '../../adapters/hsm/src';
import { AuditLog } from '../../audit/src';
import { MemoryAuditStore } from '../../audit/src/memory-store';
import { loadCaConfig, loadConfig } from '../../config/src';
import { eventsOf, type RevocationReason, type RevokeOutcome } from '../../core/src';
import { createTestTables } from '../../test-support/dynamodb';
import { runOpenssl } from '../../../scripts/local/verify/openssl';
import {
  CertificateAuthority,
  RevocationAuthority,
  caCertificateStore,
  revokeCertificate,
  type CaCertificates,
} from '../src';
import { evidenceFor, keyAndCsr } from './helpers';
import { directAssertionVerifier } from '../../../scripts/local/idp/direct-assertions';

const config = loadConfig();
const caConfig = loadCaConfig();
let hsm: Pkcs11Hsm;
let doc: DynamoDBDocumentClient;
let tables: { certificates: string };
let caCerts: CaCertificates;
let ca: CertificateAuthority;
let revocation: RevocationAuthority;
let auditStore: MemoryAuditStore;
let revoke: (serial: string, reason: RevocationReason, by: string) => Promise<RevokeOutcome>;
const keys: PrivateKeyRef[] = [];

beforeAll(async () => {
  hsm = await connectHsm(config.hsm, config.aws);
  doc = documentClient(config.aws);
  tables = await createTestTables(['certificates']);
  caCerts = (await caCertificateStore(caConfig.certsSource, config.aws).read())!;
  const certificates = new CertificateRepository(doc, { tableName: tables.certificates });
  ca = await CertificateAuthority.create({
    hsm,
    evidence: directAssertionVerifier(),
    certificates,
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
  doc?.destroy();
});

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

test('a fresh certificate is good, a revoked one revoked with reason and time, a random serial unknown; responses verify', async () => {
  const fresh = await issue();
  const request = ocspRequest(fresh.pem);
  const good = readOcspResponse(request, await revocation.respondOcsp(request));
  expect(good.stderr).toContain('Response verify OK');
  expect(good.stdout).toMatch(/Cert Status: good/);
  expect(good.stdout).toMatch(/OCSP Nonce/);

  const revoked = await issue();
  const outcome = await revoke(revoked.serial, 'keyCompromise', 'operator');
  expect(outcome.outcome).toBe('revoked');
  const revokedRequest = ocspRequest(revoked.pem);
  const answer = readOcspResponse(revokedRequest, await revocation.respondOcsp(revokedRequest));
  expect(answer.stderr).toContain('Response verify OK');
  expect(answer.stdout).toMatch(/Cert Status: revoked/);
  expect(answer.stdout).toMatch(/Reason: keyCompromise/);
  expect(answer.stdout).toMatch(/Revocation Time: /);

  // A serial this CA never issued, under the same issuer: unknown.
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
  const unknown = runOpenssl(
    ['ocsp', '-reqin', 'req.der', '-respin', 'resp.der', '-CAfile', 'chain.pem', '-resp_text'],
    {
      'req.der': unknownRequest,
      'resp.der': await revocation.respondOcsp(unknownRequest),
      'chain.pem': `${caCerts.rootPem}${caCerts.issuingPem}`,
    },
  );
  expect(unknown.stderr).toContain('Response verify OK');
  expect(unknown.stdout).toMatch(/Cert Status: unknown/);
});

test('the nonce is echoed; without one none is sent; garbage is malformedRequest; another issuer is unauthorized', async () => {
  const leaf = await issue();
  const withNonce = ocspRequest(leaf.pem, true);
  const withoutNonce = ocspRequest(leaf.pem, false);
  // openssl checks the nonce against the request's: a missing or different one is an error.
  expect(readOcspResponse(withNonce, await revocation.respondOcsp(withNonce)).stderr).not.toMatch(/nonce/i);
  const plain = readOcspResponse(withoutNonce, await revocation.respondOcsp(withoutNonce));
  expect(plain.stdout).not.toMatch(/OCSP Nonce/);
  const status = (der: Buffer): string =>
    runOpenssl(['ocsp', '-respin', 'r.der', '-resp_text', '-noverify'], { 'r.der': der }).stdout;
  expect(status(await revocation.respondOcsp(Buffer.from('not an ocsp request')))).toMatch(
    /Responder Error: malformedrequest \(1\)/,
  );
  // Asked about a certificate of another CA (the root's own, issued by itself).
  const foreign = runOpenssl(
    ['ocsp', '-issuer', 'root.pem', '-cert', 'root.pem', '-reqout', 'req.der'],
    { 'root.pem': caCerts.rootPem },
    ['req.der'],
  ).outputs['req.der'];
  expect(status(await revocation.respondOcsp(foreign))).toMatch(/Responder Error: unauthorized \(6\)/);
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
