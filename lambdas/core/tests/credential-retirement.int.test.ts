/**
 * Unused one-time credentials retired against DynamoDB Local: the creating request of a credential whose
 * certificate expired (past the margin) has its serial revoked and its wrapped key removed; one still
 * within its time, and one used, are left; nothing is listed twice.
 */
import { documentClient } from '@pipeline/adapters/aws';
import { RequestRepository } from '@pipeline/adapters/dynamodb';
import { loadAwsConfig } from '@pipeline/config';
import { createTestTables } from '../../../scripts/local/resources';
import { sampleSignRequestRecord } from '../../../scripts/local/sample-sign-request';
import { CREDENTIAL_RETIREMENT_MARGIN_MS, retireUnusedCredentials } from '../src/signing';
import { ONE_TIME_CREDENTIAL_VALIDITY_MS } from '../src/pki';

jest.setTimeout(60_000);

let requests: RequestRepository;

beforeEach(async () => {
  const tables = await createTestTables(['requests']);
  requests = new RequestRepository(documentClient(loadAwsConfig(process.env)), {
    tableName: tables.requests,
  });
});

/** A creating request that ended holding its key (as the signer completes it). */
async function held(receivedAt: number, serial: string): Promise<string> {
  const record = sampleSignRequestRecord({ receivedAt, credential: { create: true } });
  await requests.create(record);
  await requests.startAttempt(record.id, {
    attemptId: 'a',
    startedAt: receivedAt,
    leaseUntil: receivedAt + 1000,
  });
  await requests.complete(record.id, 'a', {
    certificate: 'PEM',
    certificateSerial: serial,
    chain: [],
    pooledKey: true,
    keyAcquiredAt: receivedAt,
    finishedAt: receivedAt,
    stageMs: {},
    discardedKeys: 0,
    reservedKey: {
      keyId: `key-${serial}`,
      wrappedKey: 'AA==',
      publicKeySpki: 'AA==',
      wrapKeyLabel: 'w',
      hsmProfile: 'softhsm',
      usableUntil: receivedAt + ONE_TIME_CREDENTIAL_VALIDITY_MS,
    },
  });
  return record.id;
}

test('an unused credential past its certificate and the margin is revoked and its key removed; others stay', async () => {
  const now = Date.now();
  const old = now - ONE_TIME_CREDENTIAL_VALIDITY_MS - CREDENTIAL_RETIREMENT_MARGIN_MS - 60_000;
  const expired = await held(old, 'aa01');
  const recent = await held(now - 60_000, 'aa02');
  const used = await held(old, 'aa03');
  await requests.dropReservedKey(used, 'key-aa03');

  const revoked: string[] = [];
  const deps = {
    store: requests,
    revoke: async (requestId: string) => {
      revoked.push(requestId);
    },
    limit: 10,
  };
  expect(await retireUnusedCredentials(deps)).toEqual({ examined: 1, retired: 1 });
  expect(revoked).toEqual([expired]);
  expect((await requests.get(expired))?.reservedKey).toBeUndefined();
  expect((await requests.get(recent))?.reservedKey).toBeDefined();
  expect((await requests.get(used))?.reservedKey).toBeUndefined();
  // Retired once: the next run finds nothing.
  expect(await retireUnusedCredentials(deps)).toEqual({ examined: 0, retired: 0 });
  // The credentials are no open requests: the reconciler and admission do not see them.
  expect(await requests.listOpen(now, 10)).not.toContain(recent);
});

test('a failed revocation leaves the credential held for the next run', async () => {
  const id = await held(
    Date.now() - ONE_TIME_CREDENTIAL_VALIDITY_MS - CREDENTIAL_RETIREMENT_MARGIN_MS - 60_000,
    'bb01',
  );
  const down = { store: requests, limit: 10, revoke: async () => Promise.reject(new Error('CA down')) };
  await expect(retireUnusedCredentials(down)).rejects.toThrow('CA down');
  expect((await requests.get(id))?.reservedKey).toBeDefined();
});
