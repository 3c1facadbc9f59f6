/**
 * Revocation as relying parties see it, through the whole local pipeline over HTTP: a signed request's
 * certificate is good in OCSP (POST and GET bindings) and passes `openssl verify -crl_check` with the
 * published CRL; after the e-service revokes it through the API, OCSP says revoked with the reason and
 * time, the republished CRL lists it and openssl refuses the certificate; a serial never issued gets the
 * unsigned `unauthorized`. Every answer is checked by the openssl command line against the chain.
 */
import { X509Certificate, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { documentClient } from '../../../../lambdas/adapters/aws/src';
import { AuditRepository } from '../../../../lambdas/adapters/dynamodb/src/audit-repository';
import { loadAwsConfig } from '../../../../lambdas/config/src';
import { eventsOf } from '../../../../lambdas/core/src';
import { TABLES, tableName } from '../../../../lambdas/resources/src';
import { runOpenssl, runOpensslAsync } from '../../verify/openssl';
import { call, sampleRequest, type SignRequestView } from '../../client';
import { LOCAL_DIR } from '../../paths';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

let pipeline: LocalPipeline;
let pki: string;
const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
const issuingPem = readFileSync(join(LOCAL_DIR, 'ca', 'issuing.pem'), 'utf8');
const chainPem = `${rootPem}${issuingPem}`;

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

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function fetchDer(url: string): Promise<Buffer | undefined> {
  const res = await fetch(url);
  return res.ok ? Buffer.from(await res.arrayBuffer()) : undefined;
}

/** `openssl ocsp -url` (POST binding) for the certificate, verified against the chain. */
function ocspPost(leafPem: string) {
  return runOpensslAsync(
    [
      'ocsp',
      '-issuer',
      'issuing.pem',
      '-cert',
      'leaf.pem',
      '-url',
      `${pki}/ocsp`,
      '-CAfile',
      'chain.pem',
      '-resp_text',
    ],
    { 'issuing.pem': issuingPem, 'leaf.pem': leafPem, 'chain.pem': chainPem },
  );
}

/** The GET binding (RFC 6960 A.1): base64, then URL-encoded, in the path; verified by openssl. */
async function ocspGet(leafPem: string) {
  const request = runOpenssl(
    ['ocsp', '-issuer', 'issuing.pem', '-cert', 'leaf.pem', '-no_nonce', '-reqout', 'req.der'],
    { 'issuing.pem': issuingPem, 'leaf.pem': leafPem },
    ['req.der'],
  ).outputs['req.der'];
  const res = await fetch(`${pki}/ocsp/${encodeURIComponent(request.toString('base64'))}`);
  expect(res.headers.get('content-type')).toBe('application/ocsp-response');
  const response = Buffer.from(await res.arrayBuffer());
  return runOpenssl(
    ['ocsp', '-reqin', 'req.der', '-respin', 'resp.der', '-CAfile', 'chain.pem', '-resp_text'],
    {
      'req.der': request,
      'resp.der': response,
      'chain.pem': chainPem,
    },
  );
}

function verifyWithCrl(leafPem: string, issuingCrl: Buffer, rootCrl: Buffer) {
  return runOpenssl(
    [
      'verify',
      '-crl_check_all',
      '-CAfile',
      'chain.pem',
      '-CRLfile',
      'issuing.crl',
      '-CRLfile',
      'root.crl',
      'leaf.pem',
    ],
    {
      'chain.pem': chainPem,
      'issuing.crl': pemCrl(issuingCrl),
      'root.crl': pemCrl(rootCrl),
      'leaf.pem': leafPem,
    },
  );
}

const pemCrl = (der: Buffer): string =>
  `-----BEGIN X509 CRL-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END X509 CRL-----\n`;

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

  const good = await ocspPost(leafPem);
  expect(good.stderr).toContain('Response verify OK');
  expect(good.stdout).toMatch(/leaf\.pem: good/);
  const goodByGet = await ocspGet(leafPem);
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

  const answer = await ocspPost(leafPem);
  expect(answer.stderr).toContain('Response verify OK');
  expect(answer.stdout).toMatch(/leaf\.pem: revoked/);
  expect(answer.stdout).toMatch(/Reason: keyCompromise/);
  expect(answer.stdout).toMatch(/Revocation Time: /);
  expect((await ocspGet(leafPem)).stdout).toMatch(/Cert Status: revoked/);

  // The revocation started a publication: the next CRL lists the serial, and openssl refuses the leaf.
  const listed = await until('a CRL listing the revoked serial', async () => {
    const crl = await fetchDer(`${pki}/issuing.crl`);
    const text =
      crl &&
      runOpenssl(['crl', '-inform', 'DER', '-in', 'c.der', '-noout', '-text'], { 'c.der': crl }).stdout;
    return text?.includes(`Serial Number: ${serial}`) ? crl : undefined;
  });
  const refused = verifyWithCrl(leafPem, listed, rootCrl);
  expect(refused.ok).toBe(false);
  expect(`${refused.stdout}${refused.stderr}`).toMatch(/certificate revoked/);

  // The audit log holds the revocation.
  const doc = documentClient(loadAwsConfig());
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
