/**
 * One-time credentials through the signing core, against DynamoDB Local, the SoftHSM token, the real CSR
 * builder and the real CA (docs/csc.md, "Certificate before hash"): a creation request gets a short-lived
 * certificate and keeps its pool key wrapped, signing nothing; the one request a second login approves
 * signs with that key under that certificate (openssl); the credential serves no second request, even
 * with its wrapped key written back, and no other person.
 */
import { X509Certificate, createHash, randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { loadConfig } from '@pipeline/config';
import { buildCsr } from '@pipeline/der';
import { sampleSignRequestRecord } from '../../../scripts/local/sample-sign-request';
import { opensslVerifyDigest } from '../../../scripts/local/verify/openssl';
import { createTestSigningStack, type TestSigningStack } from '../../../scripts/local/signing-stack';
import { createLocalCa } from '../../../scripts/local/local-ca';
import { CertificateRepository } from '@pipeline/adapters/dynamodb';
import { retireCredentialCertificate } from '@pipeline/ca';
import { AuditLog } from '@pipeline/audit';
import { InMemoryPoolMetrics, fillPool } from '../src/pool';
import { processSignRequest, type SignRequestRecord, type SigningDeps } from '../src/signing';
import { credentialDigest } from '../src/identity';
import { ONE_TIME_CREDENTIAL_VALIDITY_MS } from '../src/pki';
import { eventsOf, keyUsage } from '../src/audit';

const config = loadConfig(process.env);
let stack: TestSigningStack;
let signing: SigningDeps;

beforeAll(async () => {
  stack = await createTestSigningStack({ poolShards: 2 });
  // One log for the signer and the CA, as deployed: the CA's credential.activated beside the signatures.
  const audit = new AuditLog(stack.auditStore, { chains: 2 });
  const { issuer } = await createLocalCa({
    hsm: stack.hsm,
    doc: stack.doc,
    certificatesTable: stack.tables.certificates,
    audit,
  });
  signing = {
    requests: stack.requests,
    pool: stack.pool,
    hsm: stack.hsm,
    buildCsr,
    issuer,
    audit,
    metrics: new InMemoryPoolMetrics(),
    sleep: async () => undefined,
    settings: {
      emptyPoolPolicy: 'reject',
      retryAfterSeconds: 30,
      leaseMs: 30_000,
      hsmProfile: config.hsm.profile,
    },
  };
  const filled = await fillPool(
    { hsm: stack.hsm, pool: stack.pool, metrics: new InMemoryPoolMetrics() },
    {
      keyType: 'EC-P256',
      count: 6,
      parallelism: 2,
      deadline: Date.now() + 60_000,
      wrapKeyLabel: config.hsm.wrapKeyLabel,
      hsmProfile: config.hsm.profile,
      maxAgeSeconds: 3600,
    },
  );
  expect(filled.stored).toBe(6);
});

afterAll(async () => {
  await stack?.close();
});

async function processed(overrides: Partial<SignRequestRecord>): Promise<SignRequestRecord> {
  const record = sampleSignRequestRecord(overrides);
  await stack.requests.create(record);
  return (await processSignRequest(signing, record.id)).record;
}

async function createCredential(signer?: SignRequestRecord['signer']): Promise<SignRequestRecord> {
  const id = randomUUID();
  const digest = credentialDigest({
    requestId: id,
    keyType: 'EC-P256',
    signatureAlgorithm: 'ECDSA',
    credential: 'create',
  });
  return processed({ id, digest, credential: { create: true }, ...(signer ? { signer } : {}) });
}

const spkiOf = (pem: string): Buffer =>
  new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });

test('a creation certifies a key for 15 minutes and keeps it wrapped; one use signs with it under that certificate', async () => {
  const credential = await createCredential();
  expect(credential).toMatchObject({ status: 'signed', pooledKey: true });
  expect(credential.signature).toBeUndefined();
  const certificate = new X509Certificate(credential.certificate!);
  const lifetime = Date.parse(certificate.validTo) - Date.now();
  expect(lifetime).toBeGreaterThan(ONE_TIME_CREDENTIAL_VALIDITY_MS - 120_000);
  expect(lifetime).toBeLessThanOrEqual(ONE_TIME_CREDENTIAL_VALIDITY_MS);
  expect(Buffer.from(credential.reservedKey!.publicKeySpki, 'base64')).toEqual(
    spkiOf(credential.certificate!),
  );

  const use = await processed({ credential: { use: credential.id } });
  expect(use.error).toBeUndefined();
  expect(use).toMatchObject({ status: 'signed', certificate: credential.certificate });
  expect(
    opensslVerifyDigest({
      publicKeySpki: spkiOf(use.certificate!),
      digest: Buffer.from(use.digest, 'base64'),
      signature: Buffer.from(use.signature!, 'base64'),
      digestAlgorithm: use.digestAlgorithm,
      signatureAlgorithm: use.signatureAlgorithm,
    }),
  ).toBe(true);
  // The wrapped key is gone from the creating request.
  expect((await stack.requests.get(credential.id))?.reservedKey).toBeUndefined();

  // A table writer puts it back: the CA released the certificate to the first use only.
  await stack.doc.send(
    new UpdateCommand({
      TableName: stack.tables.requests,
      Key: { id: credential.id },
      UpdateExpression: 'SET reservedKey = :key',
      ExpressionAttributeValues: { ':key': credential.reservedKey },
    }),
  );
  const again = await processed({ credential: { use: credential.id } });
  expect(again).toMatchObject({ status: 'failed', error: { code: 'CREDENTIAL_USED' } });
  expect(again.signature).toBeUndefined();

  // The log: the key certified for the creation and signing for its one use is one use of one key.
  const mine = new Set([credential.id, use.id, again.id]);
  const events = eventsOf(await stack.auditStore.readAll()).filter(
    (e) => 'requestId' in e && mine.has(e.requestId ?? ''),
  );
  expect(events.filter((e) => e.type === 'credential.activated')).toEqual([
    expect.objectContaining({ requestId: use.id, credentialRequestId: credential.id }),
  ]);
  const usage = keyUsage(events);
  expect(usage.reused).toEqual([]);
  expect(
    usage.requestsByKey.get(`spki:${createHash('sha256').update(spkiOf(use.certificate!)).digest('hex')}`),
  ).toEqual([credential.id]);
});

test('a second login of another person gets nothing signed with the credential', async () => {
  const credential = await createCredential();
  const other = {
    commonName: 'Olle Other',
    givenName: 'Olle',
    surname: 'Other',
    serialNumber: '198002029999',
    country: 'SE',
  };
  const use = await processed({ signer: other, credential: { use: credential.id } });
  expect(use).toMatchObject({ status: 'failed', error: { code: 'SIGNER_MISMATCH' } });
  // Still there for its own person.
  const own = await processed({ credential: { use: credential.id } });
  expect(own).toMatchObject({ status: 'signed', certificate: credential.certificate });
});

test("another client's request gets nothing of a credential", async () => {
  const credential = await createCredential();
  const use = await processed({ clientId: 'another-client', credential: { use: credential.id } });
  expect(use).toMatchObject({ status: 'failed', error: { code: 'CREDENTIAL_UNKNOWN' } });
  const stored = await stack.doc.send(
    new GetCommand({ TableName: stack.tables.requests, Key: { id: credential.id }, ConsistentRead: true }),
  );
  expect(stored.Item?.reservedKey).toBeDefined();
});

test("the CA's retirement revokes an unused credential's certificate, never one released to a request", async () => {
  const store = new CertificateRepository(stack.doc, { tableName: stack.tables.certificates });
  const unused = await createCredential();
  const used = await createCredential();
  expect(await processed({ credential: { use: used.id } })).toMatchObject({ status: 'signed' });

  expect(await retireCredentialCertificate({ store }, used.id, 'reconcile')).toEqual({ outcome: 'used' });
  expect(await retireCredentialCertificate({ store }, unused.id, 'reconcile')).toMatchObject({
    outcome: 'revoked',
  });
  const statuses = await store.statuses([unused.certificateSerial!, used.certificateSerial!]);
  expect(statuses.get(unused.certificateSerial!)?.revocation).toMatchObject({
    reason: 'cessationOfOperation',
    revokedBy: 'reconcile',
  });
  expect(statuses.get(used.certificateSerial!)?.revocation).toBeUndefined();
});
