/**
 * The issued-certificate repository against DynamoDB Local: one certificate per request, serials never
 * reused, an assertion certified for one request, a public key certified once: all enforced by DynamoDB
 * conditions in the certificate's own transaction (not by the caller).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { SerialCollisionError } from '@pipeline/ca';
import {
  MAX_REPLACEMENTS,
  type CertificateToRecord,
  type IssuanceRegisters,
  type IssuedCertificateRecord,
} from '@pipeline/core/pki';
import { createTestTables } from '../../../../scripts/local/resources';
import { AuditLog } from '@pipeline/audit';
import {
  AuditAppendConflictError,
  auditEntryPk,
  auditSequenceSk,
  eventsOf,
  verifyAuditLog,
  type CertificateIssuedEvent,
  type LoggedIssuance,
} from '@pipeline/core/audit';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { AuditRepository } from '../src/audit-repository';
import { CertificateRepository, LoggedCertificateRepository } from '../src/certificate-repository';

let doc: DynamoDBDocumentClient;
let repository: CertificateRepository;
let auditStore: AuditRepository;
let auditTable: string;

beforeAll(async () => {
  const { certificates, audit } = await createTestTables(['certificates', 'audit']);
  doc = documentClient(loadAwsConfig(process.env));
  repository = new CertificateRepository(doc, { tableName: certificates });
  auditTable = audit;
  auditStore = new AuditRepository(doc, { tableName: audit });
});

afterAll(() => doc?.destroy());

function registers(overrides: Partial<IssuanceRegisters> = {}): IssuanceRegisters {
  const now = Math.floor(Date.now() / 1000);
  return {
    assertionKey: randomBytes(32).toString('hex'),
    assertionExpiresAt: now + 3600,
    publicKeyExpiresAt: now + 400 * 86_400,
    ...overrides,
  };
}

/** A certificate with fresh register entries (overridable). */
function item(
  overrides: Partial<IssuedCertificateRecord> = {},
  registerOverrides: Partial<IssuanceRegisters> = {},
): CertificateToRecord {
  return { certificate: record(overrides), registers: registers(registerOverrides) };
}

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

it('stores a certificate under its request and its serial, with its register entries', async () => {
  const stored = item();
  const first = stored.certificate;
  expect(await repository.record(stored)).toEqual({ stored: true });
  expect(await repository.getByRequest(first.requestId)).toEqual(first);
  const [state] = await repository.lookup([
    {
      requestId: first.requestId,
      assertionKey: stored.registers.assertionKey,
      publicKeyHash: first.publicKeyHash,
    },
  ]);
  expect(state).toEqual({
    existing: first,
    assertionUse: { requestId: first.requestId },
    publicKeyUse: { requestId: first.requestId, serialHex: first.serialHex },
  });
  expect(await repository.getBySerial(first.serialHex)).toMatchObject({
    requestId: first.requestId,
    notAfter: first.notAfter,
    subjectHash: first.subjectHash,
  });
  expect(await repository.getByRequest('unknown')).toBeUndefined();
});

it('keeps the first certificate of a request and returns it to a second writer', async () => {
  const first = item();
  await repository.record(first);
  const second = item({ requestId: first.certificate.requestId });
  expect(await repository.record(second)).toEqual({ stored: false, existing: first.certificate });
  // The loser's serial was not consumed: the transaction wrote none of its items.
  expect(await repository.getBySerial(second.certificate.serialHex)).toBeUndefined();
});

it('refuses a serial that was already used, even for another request', async () => {
  const first = item();
  await repository.record(first);
  await expect(repository.record(item({ serialHex: first.certificate.serialHex }))).rejects.toThrow(
    SerialCollisionError,
  );
});

it('an assertion certified for one request is refused for another; a public key is certified once', async () => {
  const first = item();
  await repository.record(first);
  const sameAssertion = item({}, { assertionKey: first.registers.assertionKey });
  expect(await repository.record(sameAssertion)).toEqual({ stored: false, conflict: 'assertion-used' });
  const sameKey = item({ publicKeyHash: first.certificate.publicKeyHash });
  expect(await repository.record(sameKey)).toEqual({ stored: false, conflict: 'public-key-certified' });
  // Nothing of the refused ones was written.
  for (const refused of [sameAssertion, sameKey]) {
    expect(await repository.getByRequest(refused.certificate.requestId)).toBeUndefined();
    expect(await repository.getBySerial(refused.certificate.serialHex)).toBeUndefined();
  }
  // In a batch too: the refused group is answered false, the others are written.
  const fresh = item();
  expect(
    await repository.recordMany([item({ publicKeyHash: first.certificate.publicKeyHash }), fresh]),
  ).toEqual([false, true]);
});

it('a certificate is recorded released to its attempt; another attempt gets no second one, a revocation stays', async () => {
  const released = item({ attemptId: 'attempt-1', releasedAt: 1_700_000_060_000 });
  expect(await repository.record(released)).toEqual({ stored: true });
  const { requestId, serialHex } = released.certificate;
  expect(await repository.getByRequest(requestId)).toMatchObject({
    serialHex,
    attemptId: 'attempt-1',
    releasedAt: 1_700_000_060_000,
  });
  // An attempt that took the request over, with a new key and the request's own assertion: nothing written.
  const takeover = item(
    { requestId, attemptId: 'attempt-2' },
    { assertionKey: released.registers.assertionKey },
  );
  expect(await repository.record(takeover)).toEqual({ stored: false, existing: released.certificate });
  expect(await repository.getBySerial(takeover.certificate.serialHex)).toBeUndefined();
  expect(await repository.recordMany([takeover])).toEqual([false]);

  // Revoked: a takeover writes nothing either, and the serial keeps its revocation.
  const revoked = item({ attemptId: 'attempt-1', releasedAt: 1 });
  await repository.record(revoked);
  const serial = revoked.certificate.serialHex;
  await repository.revoke(serial, { revokedAt: 5000, reason: 'keyCompromise', revokedBy: 'client' });
  const again = item(
    { requestId: revoked.certificate.requestId, attemptId: 'attempt-2' },
    { assertionKey: revoked.registers.assertionKey },
  );
  expect(await repository.record(again)).toMatchObject({ stored: false, existing: { serialHex: serial } });
  expect((await repository.statuses([serial])).get(serial)?.revocation).toEqual({
    revokedAt: 5000,
    reason: 'keyCompromise',
    revokedBy: 'client',
  });
});

it("registers a request id to its first client, and reads a request's certificate with its owner", async () => {
  const stored = item();
  await repository.record(stored);
  const { requestId, serialHex } = stored.certificate;
  expect(await repository.requestCertificate(requestId)).toEqual({ serialHex });
  expect(await repository.registerOwner(requestId, 'client-a', 4_000_000_000)).toBe(true);
  expect(await repository.registerOwner(requestId, 'client-a', 4_000_000_000)).toBe(true);
  expect(await repository.registerOwner(requestId, 'client-b', 4_000_000_000)).toBe(false);
  expect(await repository.requestCertificate(requestId)).toEqual({ serialHex, owner: 'client-a' });
  expect(await repository.requestCertificate(randomUUID())).toEqual({});
});

it('lets exactly one of many concurrent writers for one request win', async () => {
  const requestId = randomUUID();
  const results = await Promise.all(Array.from({ length: 5 }, () => repository.record(item({ requestId }))));
  expect(results.filter((r) => r.stored)).toHaveLength(1);
  const stored = await repository.getByRequest(requestId);
  for (const r of results) if (!r.stored) expect('existing' in r && r.existing).toEqual(stored);
});

describe('with the audit entry of their events (LoggedCertificateRepository)', () => {
  const CHAINS = 2;

  function logged(overrides: Partial<IssuedCertificateRecord> = {}): LoggedIssuance {
    const toRecord = item(overrides);
    const c = toRecord.certificate;
    const event: CertificateIssuedEvent = {
      type: 'certificate.issued',
      requestId: c.requestId,
      serial: c.serialHex,
      subjectHash: c.subjectHash,
      keySpkiHash: c.publicKeyHash,
    };
    return { record: toRecord, event };
  }

  const issuedSerials = async (): Promise<string[]> =>
    eventsOf(await auditStore.readAll()).flatMap((e) => (e.type === 'certificate.issued' ? [e.serial] : []));

  it('commits the certificates and the entry of their events together, in groups that fit one transaction', async () => {
    const log = new AuditLog(auditStore, { chains: CHAINS });
    const store = new LoggedCertificateRepository(repository, log);
    // 30 requests: 120 certificate items and an entry per group, more than one transaction holds.
    const items = Array.from({ length: 30 }, () => logged());
    expect(await store.recordLogged(items)).toEqual(items.map(() => 'stored'));
    const serials = await issuedSerials();
    for (const { record: r } of items) {
      expect(await repository.getByRequest(r.certificate.requestId)).toEqual(r.certificate);
      expect(serials.filter((s) => s === r.certificate.serialHex)).toHaveLength(1);
    }
    const stored = await auditStore.readAll();
    // Two entries (24 + 6 events), and a log that verifies.
    const sizes = [...stored.entries.values()].flat().map((e) => e.events?.length);
    expect(sizes).toEqual(expect.arrayContaining([24, 6]));
    expect(verifyAuditLog({ ...stored, chains: CHAINS }, undefined).intact).toBe(true);
  });

  it('a refused certificate item cancels its group: no certificate item and no audit entry of it, the head unmoved', async () => {
    const log = new AuditLog(auditStore, { chains: CHAINS });
    const store = new LoggedCertificateRepository(repository, log);
    const earlier = logged();
    expect(await store.recordLogged([earlier])).toEqual(['stored']);
    const heads = await auditStore.readHeads(CHAINS);
    // The same request again (another serial and key), beside a fresh one.
    const again = logged({ requestId: earlier.record.certificate.requestId });
    const fresh = logged();
    expect(await store.recordLogged([fresh, again])).toEqual(['cancelled', 'refused']);
    expect(await auditStore.readHeads(CHAINS)).toEqual(heads);
    for (const { record: r } of [fresh, again]) {
      expect(await repository.getBySerial(r.certificate.serialHex)).toBeUndefined();
    }
    expect(await repository.getByRequest(fresh.record.certificate.requestId)).toBeUndefined();
    const serials = await issuedSerials();
    expect(serials).not.toContain(fresh.record.certificate.serialHex);
    expect(serials).not.toContain(again.record.certificate.serialHex);
    // The log goes on from the same head: the fresh one alone is written.
    expect(await store.recordLogged([fresh])).toEqual(['stored']);
    expect(verifyAuditLog({ ...(await auditStore.readAll()), chains: CHAINS }, undefined).intact).toBe(true);
  });

  it('an audit entry that cannot be written stores no certificate item', async () => {
    // The next entry's slot of chain 1 taken behind the log's back: its put is refused every time.
    const chain = 1;
    const head = await auditStore.readHead(chain);
    await doc.send(
      new PutCommand({
        TableName: auditTable,
        Item: { pk: auditEntryPk(chain), sk: auditSequenceSk(head.sequence + 1), planted: true },
      }),
    );
    const log = new AuditLog(auditStore, { chains: CHAINS, chain, maxAttempts: 2, sleep: async () => {} });
    const store = new LoggedCertificateRepository(repository, log);
    const blocked = logged();
    await expect(store.recordLogged([blocked])).rejects.toThrow(AuditAppendConflictError);
    expect(await repository.getByRequest(blocked.record.certificate.requestId)).toBeUndefined();
    expect(await repository.getBySerial(blocked.record.certificate.serialHex)).toBeUndefined();
    expect(
      await repository.lookup([
        {
          requestId: blocked.record.certificate.requestId,
          assertionKey: blocked.record.registers.assertionKey,
          publicKeyHash: blocked.record.certificate.publicKeyHash,
        },
      ]),
    ).toEqual([{}]);
  });
});

describe('a replacement (supersedes): the earlier serial revoked superseded in the same transaction', () => {
  /** A request's first certificate, then its replacement's item (same request and assertion, new key). */
  async function recorded() {
    const first = item();
    expect(await repository.record(first)).toEqual({ stored: true });
    const replacement: CertificateToRecord = {
      certificate: record({
        requestId: first.certificate.requestId,
        supersedes: first.certificate.serialHex,
        replacements: 1,
      }),
      registers: registers({ assertionKey: first.registers.assertionKey }),
    };
    return { first: first.certificate, replacement };
  }

  it('stores it over the first and revokes the first serial, once; another replacement of the first writes nothing', async () => {
    const { first, replacement } = await recorded();
    expect(await repository.record(replacement)).toEqual({ stored: true });
    expect(await repository.getByRequest(first.requestId)).toEqual(replacement.certificate);
    expect(await repository.serialState(first.serialHex)).toBe('revoked');
    expect(await repository.serialState(replacement.certificate.serialHex)).toBe('valid');
    expect(await repository.serialState('ffff')).toBe('unknown');
    expect((await repository.statuses([first.serialHex])).get(first.serialHex)?.revocation).toEqual({
      revokedAt: replacement.certificate.issuedAt,
      reason: 'superseded',
      revokedBy: 'ca',
    });
    expect(await repository.getBySerial(first.serialHex)).toMatchObject({
      supersededBy: replacement.certificate.serialHex,
    });
    // Only over the current one: another replacement of the first writes nothing and reads the current one.
    const again = record({ requestId: first.requestId, supersedes: first.serialHex, replacements: 1 });
    expect(
      await repository.record({
        certificate: again,
        registers: registers({ assertionKey: replacement.registers.assertionKey }),
      }),
    ).toEqual({ stored: false, existing: replacement.certificate });
    expect(await repository.getBySerial(again.serialHex)).toBeUndefined();
  });

  it('a chain of replacements up to MAX_REPLACEMENTS, each over the last; then nothing is written', async () => {
    const { first, replacement } = await recorded();
    let current = first;
    for (let n = 1; n <= MAX_REPLACEMENTS + 1; n += 1) {
      const next =
        n === 1
          ? replacement.certificate
          : record({ requestId: first.requestId, supersedes: current.serialHex, replacements: n });
      const result = await repository.record({
        certificate: next,
        registers: registers({ assertionKey: replacement.registers.assertionKey }),
      });
      if (n > MAX_REPLACEMENTS) {
        expect(result).toEqual({ stored: false, existing: current });
        expect(await repository.serialState(current.serialHex)).toBe('valid');
      } else {
        expect(result).toEqual({ stored: true });
        expect(await repository.serialState(current.serialHex)).toBe('revoked');
        current = next;
      }
    }
    expect(await repository.getByRequest(first.requestId)).toMatchObject({ replacements: MAX_REPLACEMENTS });
  });

  it('a revoked first serial is not superseded: nothing is written and its revocation stays', async () => {
    const { first, replacement } = await recorded();
    await repository.revoke(first.serialHex, {
      revokedAt: 5,
      reason: 'keyCompromise',
      revokedBy: 'client-a',
    });
    expect(await repository.record(replacement)).toEqual({ stored: false, conflict: 'previous-revoked' });
    expect(await repository.getByRequest(first.requestId)).toEqual(first);
    expect(await repository.getBySerial(replacement.certificate.serialHex)).toBeUndefined();
    expect((await repository.statuses([first.serialHex])).get(first.serialHex)?.revocation).toEqual({
      revokedAt: 5,
      reason: 'keyCompromise',
      revokedBy: 'client-a',
    });
  });
});

it("reads a chain's entries back from the newest to a time, across pages", async () => {
  // A table of its own: nothing else on the chain.
  const { audit } = await createTestTables(['audit']);
  const store = new AuditRepository(doc, { tableName: audit });
  const log = new AuditLog(store, { chains: 1, chain: 0, clock: () => now, maxBatch: 1 });
  let now = 1_000;
  // Entries one by one: 130, more than a page of the read (100).
  for (let i = 0; i < 130; i++) {
    now = 1_000 + i;
    await log.append({ type: 'pool.key-claimed', keyId: `k${i}` });
  }
  const since = await store.readEntriesSince(0, 1_010);
  expect(since).toHaveLength(120);
  expect(since[0].timestamp).toBe(1_129);
  expect(since[since.length - 1].timestamp).toBe(1_010);
  expect(await store.readEntriesSince(0, 2_000)).toEqual([]);
  expect(await store.readEntriesSince(0, 0)).toHaveLength(130);
});
