/**
 * `cms` requests through the real signing core: SoftHSM keys (pooled and on the fly), the real CA over
 * DynamoDB Local, and the CMS builder. The certificate is issued before the signature, so the signed
 * attributes name it; every container is judged by `openssl cms -verify` against the bootstrap's root.
 */
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { loadConfig } from '@pipeline/config';
import { buildCsr, prepareCmsContainer } from '@pipeline/der';
import { opensslCmsVerify, opensslSigningCertificateV2Hash } from '../../../scripts/local/verify/openssl';
import { sampleSignRequestRecord } from '../../../scripts/local/sample-sign-request';
import { createTestSigningStack, type TestSigningStack } from '../../../scripts/local/signing-stack';
import { AuditLog } from '@pipeline/audit';
import { InMemoryPoolMetrics, fillPool } from '../src/pool';
import { eventsOf } from '../src/audit';
import {
  nodeHashName,
  type AdesProfile,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
} from '../src/shared';
import { processSignRequest, type SigningDeps } from '../src/signing';

const config = loadConfig(process.env);
let stack: TestSigningStack;
let audit: AuditLog;

beforeAll(async () => {
  stack = await createTestSigningStack({ poolShards: 2 });
  audit = new AuditLog(stack.auditStore, { chains: 2 });
  // Pooled EC keys; RSA keys come on the fly (the same core path after the key is acquired).
  for (const keyType of ['EC-P256', 'EC-P384'] as const) {
    await fillPool(
      { hsm: stack.hsm, pool: stack.pool, metrics: new InMemoryPoolMetrics() },
      {
        keyType,
        count: 3,
        parallelism: 1,
        deadline: Date.now() + 60_000,
        wrapKeyLabel: config.hsm.wrapKeyLabel,
        hsmProfile: config.hsm.profile,
        maxAgeSeconds: 3600,
      },
    );
  }
}, 120_000);

afterAll(async () => stack?.close());

function deps(): SigningDeps {
  return {
    requests: stack.requests,
    pool: stack.pool,
    hsm: stack.hsm,
    buildCsr,
    issuer: stack.issuer,
    buildContainer: prepareCmsContainer,
    audit,
    metrics: new InMemoryPoolMetrics(),
    settings: {
      emptyPoolPolicy: 'fallback',
      retryAfterSeconds: 30,
      leaseMs: 30_000,
      hsmProfile: config.hsm.profile,
    },
  };
}

async function signDocument(
  keyType: KeyType,
  signatureAlgorithm: SignatureAlgorithm,
  digestAlgorithm: DigestAlgorithm,
  profile: AdesProfile,
) {
  const document = randomBytes(1000);
  const record = sampleSignRequestRecord({
    keyType,
    signatureAlgorithm,
    digestAlgorithm,
    digest: createHash(nodeHashName(digestAlgorithm)).update(document).digest('base64'),
    format: 'cms',
    profile,
  });
  await stack.requests.create(record);
  const outcome = await processSignRequest(deps(), record.id);
  return { document, record, outcome };
}

const CASES: Array<[KeyType, SignatureAlgorithm, DigestAlgorithm, AdesProfile]> = [
  ['RSA-2048', 'RSASSA-PKCS1-v1_5', 'SHA-256', 'CAdES-B-B'],
  ['RSA-2048', 'RSASSA-PSS', 'SHA-256', 'PAdES-B-B'],
  ['RSA-3072', 'RSASSA-PKCS1-v1_5', 'SHA-384', 'PAdES-B-B'],
  ['RSA-3072', 'RSASSA-PSS', 'SHA-384', 'CAdES-B-B'],
  ['RSA-4096', 'RSASSA-PKCS1-v1_5', 'SHA-512', 'CAdES-B-B'],
  ['RSA-4096', 'RSASSA-PSS', 'SHA-256', 'PAdES-B-B'],
  ['EC-P256', 'ECDSA', 'SHA-256', 'CAdES-B-B'],
  ['EC-P256', 'ECDSA', 'SHA-256', 'PAdES-B-B'],
  ['EC-P384', 'ECDSA', 'SHA-384', 'CAdES-B-B'],
];

test.each(CASES)(
  '%s %s %s %s: a container openssl verifies, naming the certificate that came back',
  async (keyType, scheme, digestAlgorithm, profile) => {
    const { document, outcome } = await signDocument(keyType, scheme, digestAlgorithm, profile);
    expect(outcome.status).toBe('signed');
    const { record } = outcome;
    expect(record.signature).toBeUndefined();
    const cms = Buffer.from(record.cms!, 'base64');
    const verified = opensslCmsVerify({ cms, content: document, rootPem: stack.caCertificates.rootPem });
    expect(verified.output).toContain('Verification successful');
    const leafDer = new X509Certificate(record.certificate!).raw;
    expect(opensslSigningCertificateV2Hash(cms)).toBe(createHash('sha256').update(leafDer).digest('hex'));
    expect(record.certificateSerial).toBe(
      new X509Certificate(record.certificate!).serialNumber.toLowerCase(),
    );
    const changed = Buffer.from(document);
    changed[0] ^= 0x80;
    expect(opensslCmsVerify({ cms, content: changed, rootPem: stack.caCertificates.rootPem }).ok).toBe(false);
  },
  60_000,
);

test('the audit log holds the claim, the container signature and the destroy; nothing stays in the HSM', async () => {
  const objectsBefore = await stack.hsm.countSessionObjects();
  const { outcome, record } = await signDocument('EC-P256', 'ECDSA', 'SHA-256', 'CAdES-B-B');
  expect(outcome.status).toBe('signed');
  const events = eventsOf(await stack.auditStore.readAll()).filter(
    (e) => 'requestId' in e && e.requestId === record.id,
  );
  expect(events.map((e) => e.type).sort()).toEqual([
    'pool.key-claimed',
    'pool.key-destroyed',
    'signature.made',
  ]);
  expect(await stack.hsm.countSessionObjects()).toBe(objectsBefore);
});

test('a container request without a container builder fails CONTAINER_UNSUPPORTED and keeps nothing in the HSM', async () => {
  const objectsBefore = await stack.hsm.countSessionObjects();
  const record = sampleSignRequestRecord({ keyType: 'EC-P256', format: 'cms', profile: 'CAdES-B-B' });
  await stack.requests.create(record);
  const outcome = await processSignRequest({ ...deps(), buildContainer: undefined }, record.id);
  expect(outcome.status).toBe('failed');
  expect(outcome.record.error?.code).toBe('CONTAINER_UNSUPPORTED');
  expect(await stack.hsm.countSessionObjects()).toBe(objectsBefore);
});
