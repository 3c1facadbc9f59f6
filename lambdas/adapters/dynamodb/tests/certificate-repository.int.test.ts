/**
 * The issued-certificate repository against DynamoDB Local: one certificate per request, serials never
 * reused, both enforced by DynamoDB conditions (not by the caller).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../aws/src';
import { loadAwsConfig } from '../../../config/src';
import { SerialCollisionError, type IssuedCertificateRecord } from '../../../ca/src';
import { createTestTables } from '../../../test-support/dynamodb';
import { CertificateRepository } from '../src/certificate-repository';

let doc: DynamoDBDocumentClient;
let repository: CertificateRepository;

beforeAll(async () => {
  const { certificates } = await createTestTables(['certificates']);
  doc = documentClient(loadAwsConfig());
  repository = new CertificateRepository(doc, { tableName: certificates });
});

afterAll(() => doc?.destroy());

function record(overrides: Partial<IssuedCertificateRecord> = {}): IssuedCertificateRecord {
  return {
    serialHex: randomBytes(16).toString('hex'),
    requestId: randomUUID(),
    subjectHash: 'ab'.repeat(32),
    publicKeyHash: randomBytes(32).toString('hex'),
    notBefore: 1_700_000_000_000,
    notAfter: 1_731_536_000_000,
    issuedAt: 1_700_000_060_000,
    certificatePem: '-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n',
    chainPem: ['issuing', 'root'],
    ...overrides,
  };
}

it('stores a certificate under its request and its serial', async () => {
  const first = record();
  expect(await repository.record(first)).toEqual({ stored: true });
  expect(await repository.getByRequest(first.requestId)).toEqual(first);
  expect(await repository.getBySerial(first.serialHex)).toMatchObject({
    requestId: first.requestId,
    notAfter: first.notAfter,
    subjectHash: first.subjectHash,
  });
  expect(await repository.getByRequest('unknown')).toBeUndefined();
});

it('keeps the first certificate of a request and returns it to a second writer', async () => {
  const first = record();
  await repository.record(first);
  const second = record({ requestId: first.requestId });
  expect(await repository.record(second)).toEqual({ stored: false, existing: first });
  // The loser's serial was not consumed: the transaction wrote neither item.
  expect(await repository.getBySerial(second.serialHex)).toBeUndefined();
});

it('refuses a serial that was already used, even for another request', async () => {
  const first = record();
  await repository.record(first);
  await expect(repository.record(record({ serialHex: first.serialHex }))).rejects.toThrow(
    SerialCollisionError,
  );
});

it('lets exactly one of many concurrent writers for one request win', async () => {
  const requestId = randomUUID();
  const results = await Promise.all(
    Array.from({ length: 5 }, () => repository.record(record({ requestId }))),
  );
  expect(results.filter((r) => r.stored)).toHaveLength(1);
  const stored = await repository.getByRequest(requestId);
  for (const r of results) if (!r.stored) expect(r.existing).toEqual(stored);
});
