/**
 * Revocation as relying parties see it, through the whole local pipeline over HTTP: a signed request's
 * certificate is good in OCSP (POST and GET bindings) and passes `openssl verify -crl_check` with the
 * published CRL; after the e-service revokes it through the API, OCSP says revoked with the reason and
 * time, the republished CRL lists it and openssl refuses the certificate; a serial never issued gets the
 * unsigned `unauthorized`. Every answer is checked by the openssl command line against the chain.
 */
import { X509Certificate, randomBytes } from 'node:crypto';
import { documentClient } from '@pipeline/adapters/aws';
import { AuditRepository } from '../../../../lambdas/adapters/dynamodb/src/audit-repository';
import { loadAwsConfig } from '@pipeline/config';
import { eventsOf } from '@pipeline/core/audit';
import { TABLES, tableName } from '@pipeline/resources';
import { runOpensslAsync } from '../../verify/openssl';
import { call, sampleRequest, type SignRequestView } from '../../client';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';
import {
  chainPem,
  crlListing,
  fetchDer,
  issuingPem,
  ocspGet,
  ocspPost,
  until,
  verifyWithCrl,
} from './support/relying-party';

let pipeline: LocalPipeline;
let pki: string;

beforeAll(async () => {
  pipeline = await startLocalPipeline({
    resourcePrefix: `pki-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: { PORT: '0', POOL_TARGETS: 'EC-P256=5', LOCAL_KEYGEN_INTERVAL_SECONDS: '3600', LOG_LEVEL: 'WARN' },
  });
  await pipeline.runKeygen();
  pki = pipeline.url.replace(/\/v1$/, '/pki');
}, 120_000);

afterAll(async () => {
  await pipeline?.stop();
});

test('good, then revoked through the API: OCSP (POST and GET) and the published CRL say so; openssl agrees', async () => {
  const request = await sampleRequest('EC-P256', 0);
  const accepted = await call<{ id: string }>(`${pipeline.url}/sign-requests`, {
    apiKey: pipeline.apiKey,
    body: request.body,
  });
  expect(accepted.status).toBe(202);
  const signed = (
    await call<SignRequestView>(`${pipeline.url}/sign-requests/${accepted.body.id}?wait=20`, {
      apiKey: pipeline.apiKey,
    })
  ).body;
  expect(signed.status).toBe('signed');
  const leafPem = signed.certificate!;
  const serial = new X509Certificate(leafPem).serialNumber;

  const good = await ocspPost(pki, leafPem);
  expect(good.stderr).toContain('Response verify OK');
  expect(good.stdout).toMatch(/leaf\.pem: good/);
  const goodByGet = await ocspGet(pki, leafPem);
  expect(goodByGet.contentType).toBe('application/ocsp-response');
  expect(goodByGet.stderr).toContain('Response verify OK');
  expect(goodByGet.stdout).toMatch(/Cert Status: good/);

  const rootCrl = await until('the root CRL', () => fetchDer(`${pki}/root.crl`));
  const firstCrl = await until('the issuing CRL', () => fetchDer(`${pki}/issuing.crl`));
  expect(verifyWithCrl(leafPem, firstCrl, rootCrl).stdout).toContain('leaf.pem: OK');

  const revoked = await call<Record<string, unknown>>(
    `${pipeline.url}/sign-requests/${signed.id}/revocation`,
    {
      apiKey: pipeline.apiKey,
      body: { reason: 'keyCompromise' },
    },
  );
  expect(revoked.status).toBe(200);
  expect(revoked.body).toMatchObject({
    status: 'revoked',
    reason: 'keyCompromise',
    certificateSerial: serial.toLowerCase(),
  });

  const answer = await ocspPost(pki, leafPem);
  expect(answer.stderr).toContain('Response verify OK');
  expect(answer.stdout).toMatch(/leaf\.pem: revoked/);
  expect(answer.stdout).toMatch(/Reason: keyCompromise/);
  expect(answer.stdout).toMatch(/Revocation Time: /);
  expect((await ocspGet(pki, leafPem)).stdout).toMatch(/Cert Status: revoked/);

  // The revocation started a publication: the next CRL lists the serial, and openssl refuses the leaf.
  const listed = await crlListing(pki, [serial]);
  const refused = verifyWithCrl(leafPem, listed, rootCrl);
  expect(refused.ok).toBe(false);
  expect(`${refused.stdout}${refused.stderr}`).toMatch(/certificate revoked/);

  // The audit log holds the revocation.
  const doc = documentClient(loadAwsConfig(process.env));
  try {
    const events = eventsOf(await new AuditRepository(doc, { tableName: tableName(TABLES.audit) }).readAll());
    expect(events).toContainEqual({
      type: 'certificate.revoked',
      serial: serial.toLowerCase(),
      reason: 'keyCompromise',
      requestId: signed.id,
    });
  } finally {
    doc.destroy();
  }
}, 120_000);

test('a serial this CA never issued is unauthorized (unsigned: invented serials cost no signature); CRLs and CA certificates are served as DER with their media types', async () => {
  const unknown = await runOpensslAsync(
    [
      'ocsp',
      '-issuer',
      'issuing.pem',
      '-serial',
      `0x${randomBytes(16).toString('hex')}`,
      '-url',
      `${pki}/ocsp`,
      '-CAfile',
      'chain.pem',
      '-resp_text',
    ],
    { 'issuing.pem': issuingPem, 'chain.pem': chainPem },
  );
  expect(unknown.stdout).toMatch(/Responder Error: unauthorized \(6\)/);
  for (const [name, type] of [
    ['issuing.crl', 'application/pkix-crl'],
    ['root.crt', 'application/pkix-cert'],
  ]) {
    const res = await fetch(`${pki}/${name}`);
    expect([res.status, res.headers.get('content-type')]).toEqual([200, type]);
  }
  expect((await fetch(`${pki}/secrets.txt`)).status).toBe(404);
});
