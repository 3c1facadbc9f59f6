/**
 * Attacks on the running local pipeline by someone who can write every table and the queue (a leaked
 * role, a restored backup, a bug in another function) but cannot log anyone in, and never calls the API
 * for the victim: forged request records, legitimate records changed after the API accepted them, a
 * legitimate token put under another request id, a silent-session token, restored pool bundles and a
 * used key copied under a new id. Each ends with no certificate and no released signature (failed with
 * the code that says why), or, for replayed pool keys, signed with a fresh key; the audit log records the
 * attempt. Requests are written while no consumer runs, so they are all waiting when the signer starts.
 */
import { X509Certificate, createHash, randomBytes, randomUUID } from 'node:crypto';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { sqsClient } from '@pipeline/adapters/aws';
import { keySk, shardPk } from '@pipeline/adapters/dynamodb';
import { loadAwsConfig } from '@pipeline/config';
import {
  assertionNonce,
  bindingOf,
  signMessageHash,
  type SignMessage,
  type SignerIdentity,
} from '@pipeline/core/identity';
import { keyUsage, type AuditEvent } from '@pipeline/core/audit';
import type { SignRequestRecord } from '@pipeline/core/signing';
import { TABLES, tableName } from '@pipeline/resources';
import { localIssuer, sampleRequest, signerOf, verifySignedResult, type SignRequestView } from '../../client';
import { TEST_CITIZENS } from '../../idp/citizens';
import { forgeIdToken } from '../../idp/forge';
import {
  readAudit,
  runAll,
  scanAll,
  scanCertificates,
  submit,
  waitForTerminal,
  type FaultPipeline,
  startFaultPipeline,
} from '../../faults/harness';
import { rootPem } from './support/relying-party';

jest.setTimeout(300_000);

const BUNDLE = 5;
const POOL = 40;
const VICTIM: SignerIdentity = {
  commonName: 'Vera Victim',
  givenName: 'Vera',
  surname: 'Victim',
  serialNumber: '195505055555',
  country: 'SE',
};

let fault: FaultPipeline;

beforeAll(async () => {
  fault = await startFaultPipeline({
    env: {
      POOL_TARGETS: `EC-P256=${POOL}`,
      POOL_BUNDLE_SIZE: String(BUNDLE),
      // No signer until the attacker's writes are in place.
      LOCAL_CONSUMERS: '0',
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '10',
      SIGN_ATTEMPT_LEASE_SECONDS: '30',
      // Refused replays drain the pool: the rest are generated on the fly, none refused POOL_EMPTY.
      POOL_FALLBACK_MAX_IN_FLIGHT: '64',
      POOL_FALLBACK_WAIT_MS: '60000',
    },
  });
  await fault.pipeline.runKeygen();
});

afterAll(async () => {
  await fault?.stop();
});

/** The attacker's write into the requests table, and its message on the queue. */
async function plant(record: SignRequestRecord): Promise<void> {
  await fault.requests.create(record);
  await enqueue(record.id);
}

async function enqueue(id: string): Promise<void> {
  const sqs = sqsClient(loadAwsConfig(process.env));
  try {
    await sqs.send(new SendMessageCommand({ QueueUrl: fault.pipeline.queueUrl, MessageBody: id }));
  } finally {
    sqs.destroy();
  }
}

/** A record as the API would write it, for the victim, with what the attacker chose. */
function forgedRecord(overrides: Partial<SignRequestRecord> = {}): SignRequestRecord {
  const now = Date.now();
  return {
    id: randomUUID(),
    clientId: fault.pipeline.clients[0].clientId,
    status: 'received',
    digest: createHash('sha256').update(randomBytes(16)).digest('base64'),
    digestAlgorithm: 'SHA-256',
    keyType: 'EC-P256',
    signatureAlgorithm: 'ECDSA',
    format: 'raw',
    signer: VICTIM,
    receivedAt: now,
    expiresAt: Math.floor(now / 1000) + 3600,
    ...overrides,
  };
}

/**
 * A forged record for a test citizen with a sign message, and a token of the local identity provider's
 * key for it carrying the provider's approval of exactly that message: what a provider that displays any
 * text would give (the local one refuses such a text).
 */
async function withApprovedMessage(message: SignMessage): Promise<SignRequestRecord> {
  const record = forgedRecord({
    signer: signerOf(TEST_CITIZENS[0]),
    signMessage: message,
    signMessageHash: signMessageHash(message),
  });
  const identityAssertion = await forgeIdToken({
    issuer: localIssuer(),
    nonce: assertionNonce(bindingOf(record)),
    approval: { tbsData: record.digest, signMessageHash: record.signMessageHash! },
  });
  return { ...record, identityAssertion };
}

/** Changes fields of a stored record, as a table write would. */
async function tamper(id: string, changes: Record<string, unknown>): Promise<void> {
  const names = Object.keys(changes);
  await fault.doc.send(
    new UpdateCommand({
      TableName: tableName(TABLES.requests),
      Key: { id },
      UpdateExpression: `SET ${names.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#f${i}`, n])),
      ExpressionAttributeValues: Object.fromEntries(names.map((n, i) => [`:v${i}`, changes[n]])),
    }),
  );
}

/** What the API answers each request's client (the default client's requests). */
async function views(ids: readonly string[]): Promise<Map<string, SignRequestView | undefined>> {
  return waitForTerminal(fault.pipeline.url, fault.pipeline.apiKey, ids, Date.now() + 120_000);
}

/** The stored records, read until each is terminal (any client's). */
async function records(ids: readonly string[]): Promise<Map<string, SignRequestRecord | undefined>> {
  const deadline = Date.now() + 120_000;
  const out = new Map<string, SignRequestRecord | undefined>();
  await runAll(ids, 8, async (id) => {
    let record = await fault.requests.get(id);
    while (record && !['signed', 'failed'].includes(record.status) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      record = await fault.requests.get(id);
    }
    out.set(id, record);
  });
  return out;
}

async function auditEvents(): Promise<AuditEvent[]> {
  return (await readAudit(fault.doc)).events;
}

describe('forged and altered requests: no certificate, no signature, a code that says why, an audit entry', () => {
  const expected = new Map<string, string>();
  let control: string;
  let messageControl: string;
  let ended: Map<string, SignRequestRecord | undefined>;

  beforeAll(async () => {
    const url = fault.pipeline.url;
    const apiKey = fault.pipeline.apiKey;
    const deadline = Date.now() + 60_000;
    // Legitimate requests the API accepted (real logins of test citizens), still waiting in the queue.
    const legit = await runAll([0, 1, 2, 3, 4], 5, (i) => sampleRequest('EC-P256', i));
    const accepted = await runAll(legit, 5, (r) => submit(url, apiKey, r, deadline));
    const [signerChanged, digestChanged, keyTypeChanged, formatChanged, untouched] = accepted;
    control = untouched.id;
    await tamper(signerChanged.id, { signer: VICTIM });
    expected.set(signerChanged.id, 'SIGNER_MISMATCH');
    await tamper(digestChanged.id, { digest: createHash('sha256').update('other').digest('base64') });
    expected.set(digestChanged.id, 'ASSERTION_BINDING_MISMATCH');
    await tamper(keyTypeChanged.id, { keyType: 'EC-P384' });
    expected.set(keyTypeChanged.id, 'ASSERTION_BINDING_MISMATCH');
    await tamper(formatChanged.id, { format: 'cms', profile: 'CAdES-B-B' });
    expected.set(formatChanged.id, 'ASSERTION_BINDING_MISMATCH');

    // Records the API never saw: for the victim, raw and cms, without an assertion...
    for (const format of ['raw', 'cms'] as const) {
      const record = forgedRecord({ format, ...(format === 'cms' ? { profile: 'CAdES-B-B' } : {}) });
      await plant(record);
      expected.set(record.id, 'IDENTITY_EVIDENCE_MISSING');
    }
    // ... with a legitimate token of another request (same client, another client) ...
    for (const clientId of [fault.pipeline.clients[0].clientId, 'another-client']) {
      const record = forgedRecord({ clientId, identityAssertion: legit[4].body.identityAssertion });
      await plant(record);
      expected.set(record.id, 'ASSERTION_BINDING_MISMATCH');
    }
    // ... with a token minted from an old session at the identity provider, bound to this very record.
    const silent = forgedRecord({ signer: { ...VICTIM } });
    const silentToken = await forgeIdToken({
      issuer: localIssuer(),
      nonce: assertionNonce(bindingOf(silent)),
      overrides: { auth_time: Math.floor(Date.now() / 1000) - 3600 },
    });
    await plant({ ...silent, identityAssertion: silentToken });
    expected.set(silent.id, 'ASSERTION_LOGIN_NOT_FRESH');
    // ... with a sign message the API refuses, approved by the provider: a direction mark, a zero-width
    // space, only invisible characters (a Hangul filler, a word joiner), a tag character ...
    for (const text of [
      'Jag godkänner \u200eavtal 12',
      'Jag god\u200bkänner avtal 12',
      '\u3164\u2060',
      'Jag godkänner avtal 12\u{e0031}',
    ]) {
      const record = await withApprovedMessage({ text, mimeType: 'text/plain' });
      await plant(record);
      expected.set(record.id, 'SIGN_MESSAGE_INVALID');
    }
    // ... and a legitimate request whose stored message is changed to one with a right-to-left mark and
    // its hash to match (the assertion still binds the old one: the message is refused first).
    const messageTampered = await withApprovedMessage({
      text: 'Jag godkänner avtal 12',
      mimeType: 'text/plain',
    });
    await fault.requests.create(messageTampered);
    const rtl = { text: 'Jag godkänner avtal \u200f12', mimeType: 'text/plain' as const };
    await tamper(messageTampered.id, { signMessage: rtl, signMessageHash: signMessageHash(rtl) });
    await enqueue(messageTampered.id);
    expected.set(messageTampered.id, 'SIGN_MESSAGE_INVALID');
    // The same forgery with a message by the rules is certified: the refusals above are the message's.
    const clean = await withApprovedMessage({ text: 'Jag godkänner avtal 12', mimeType: 'text/plain' });
    await plant(clean);
    messageControl = clean.id;

    fault.pipeline.startConsumer();
    ended = await records([...expected.keys(), control, messageControl]);
  });

  test('each ends failed with its code, and nothing signed or certified leaves the service', async () => {
    const outcomes = Object.fromEntries(
      [...expected.keys()].map((id) => [id, [ended.get(id)?.status, ended.get(id)?.error?.code]]),
    );
    expect(outcomes).toEqual(Object.fromEntries([...expected].map(([id, code]) => [id, ['failed', code]])));
    for (const id of expected.keys()) {
      const record = ended.get(id)!;
      expect([record.signature, record.cms, record.certificate]).toEqual([undefined, undefined, undefined]);
    }
    // What the client named by a forged record is shown: failed, nothing to take away.
    const shown = await views(
      [...expected.keys()].filter((id) => ended.get(id)?.clientId === fault.pipeline.clients[0].clientId),
    );
    for (const view of shown.values())
      expect([view?.status, view?.signature, view?.cms, view?.certificate]).toEqual([
        'failed',
        undefined,
        undefined,
        undefined,
      ]);
    // The certificates table knows none of them, and holds no certificate naming the victim.
    const { byRequest } = await scanCertificates(fault.doc);
    expect(byRequest.filter((c) => expected.has(c.requestId))).toEqual([]);
    for (const c of byRequest) {
      expect(new X509Certificate(c.certificatePem!).subject).not.toContain(VICTIM.serialNumber);
      expect(new X509Certificate(c.certificatePem!).subject).not.toContain(VICTIM.surname);
    }
    // The untouched request of the same batch was signed as usual, and so was the clean message.
    expect(ended.get(control)?.status).toBe('signed');
    expect(ended.get(messageControl)?.status).toBe('signed');
  });

  test('the audit log records each attempt: the CA refusals with their codes, the requests refused before any key', async () => {
    const events = await auditEvents();
    const refusals = new Map<string, string>();
    for (const e of events) {
      if (e.type === 'certificate.refused' || e.type === 'request.refused') refusals.set(e.requestId, e.code);
    }
    expect(Object.fromEntries([...expected.keys()].map((id) => [id, refusals.get(id)]))).toEqual(
      Object.fromEntries(expected),
    );
    expect(events.filter((e) => e.type === 'certificate.issued' && expected.has(e.requestId))).toEqual([]);
    expect((await readAudit(fault.doc)).report.intact).toBe(true);
  });

  test('the assertions and sign messages left nothing behind: ended records no longer hold them', async () => {
    const stored = await scanAll(fault.doc, tableName(TABLES.requests));
    expect(stored.filter((r) => r.identityAssertion !== undefined).map((r) => r.id)).toEqual([]);
    // Nor the sign messages: only their hashes stay.
    expect(stored.filter((r) => r.signMessage !== undefined).map((r) => r.id)).toEqual([]);
    expect(stored.filter((r) => r.signMessageHash !== undefined).length).toBeGreaterThan(0);
  });
});

describe('restored pool bundles and a used key copied under a new id are refused by the CA; requests carry on', () => {
  test('every request is signed with a key never certified before; the replays are in the audit log', async () => {
    const poolTable = tableName(TABLES.keyPool);
    const bundles = async () => (await scanAll(fault.doc, poolTable)).filter((i) => i.sk !== '#COUNT');
    const snapshot = await bundles();
    const url = fault.pipeline.url;
    const apiKey = fault.pipeline.apiKey;
    const sign = async (count: number) => {
      const requests = await runAll(
        Array.from({ length: count }, (_, i) => i),
        6,
        (i) => sampleRequest('EC-P256', i),
      );
      const accepted = await runAll(requests, 6, (r) => submit(url, apiKey, r, Date.now() + 60_000));
      const ended = await views(accepted.map((a) => a.id));
      return accepted.map((a) => ({ ...a, view: ended.get(a.id)! }));
    };
    const first = await sign(12);
    expect(first.map((r) => r.view.status)).toEqual(first.map(() => 'signed'));

    // The attacker puts the consumed bundles back, and one used key again under a new id.
    const remaining = new Set((await bundles()).map((b) => `${b.pk} ${b.sk}`));
    const consumed = snapshot.filter((b) => !remaining.has(`${b.pk} ${b.sk}`));
    expect(consumed.length).toBeGreaterThan(0);
    for (const item of consumed) await fault.doc.send(new PutCommand({ TableName: poolTable, Item: item }));
    const used = (consumed[0].keys as Array<Record<string, unknown>>)[0];
    const copyId = randomUUID();
    const expiresAt = Number(consumed[0].expiresAt);
    await fault.doc.send(
      new PutCommand({
        TableName: poolTable,
        Item: {
          ...consumed[0],
          pk: shardPk('EC-P256', 0),
          sk: keySk(expiresAt, copyId),
          keys: [{ ...used, keyId: copyId }],
          keyCount: 1,
        },
      }),
    );
    const replayedKeys = consumed.reduce((n, b) => n + (b.keys as unknown[]).length, 0) + 1;

    // More requests than the fresh keys left: the restored ones must be claimed.
    const second = await sign(POOL - first.length + 4);
    const all = [...first, ...second];
    for (const r of all) {
      expect({ id: r.id, status: r.view.status, code: r.view.error?.code }).toEqual({
        id: r.id,
        status: 'signed',
        code: undefined,
      });
      expect(verifySignedResult(r.request, r.view, rootPem)).toEqual({ ok: true });
    }
    // Every certificate certifies a key of its own.
    const keys = all.map((r) =>
      new X509Certificate(r.view.certificate!).publicKey
        .export({ type: 'spki', format: 'der' })
        .toString('hex'),
    );
    expect(new Set(keys).size).toBe(all.length);

    const events = await auditEvents();
    const refused = events.filter(
      (e) => e.type === 'certificate.refused' && e.code === 'PUBLIC_KEY_ALREADY_CERTIFIED',
    );
    const discarded = events.filter(
      (e) => e.type === 'pool.key-discarded' && e.reason === 'already-certified',
    );
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length).toBeLessThanOrEqual(replayedKeys);
    expect(discarded.length).toBe(refused.length);
    // A key id claimed twice is on record (the replay), but no key was used for two requests.
    const usage = keyUsage(events);
    expect(usage.reused).toEqual([]);
    expect(usage.reclaimed.length).toBeGreaterThan(0);
    expect((await readAudit(fault.doc)).report.intact).toBe(true);
    console.log(
      `restored pool items: ${replayedKeys} used keys put back; ${refused.length} claimed again and refused by the CA, ` +
        `${all.length} requests signed with fresh keys`,
    );
  });
});
