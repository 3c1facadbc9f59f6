/**
 * The CA's decisions, with fakes of its ports and nothing started: an HSM made of Node's crypto (RSA
 * keys, PKCS#1 v1.5 over the given digest), a certificate store in memory with the DynamoDB repository's
 * conditions (one certificate per request, serials never reused, an assertion for one request, a public
 * key once) and its carrying write (each group of certificates with their audit events, all or nothing),
 * and the direct identity provider's real ID tokens and verifier. What it decides from, what it refuses
 * with which code, and what it writes to the audit log.
 */
import {
  constants,
  createHash,
  generateKeyPairSync,
  privateEncrypt,
  randomUUID,
  type KeyObject,
} from 'node:crypto';
import { loadCaConfig } from '@pipeline/config';
import {
  IdentityProviderUnavailableError,
  assertionNonce,
  composeSignMessage,
  manifestHash,
  requestBindingOf,
  signMessageHash,
  type ManifestBinding,
  type ManifestDocument,
  type AssertionVerifier,
  type SignerIdentity,
} from '@pipeline/core/identity';
import {
  MAX_REPLACEMENTS,
  SerialCollisionError,
  type CertificateToRecord,
  type IssuanceLookup,
  type IssuanceState,
  type IssuedCertificateRecord,
  type IssuedCertificateStore,
  type SerialState,
} from '@pipeline/core/pki';
import type {
  AuditEvent,
  AuditSink,
  LoggedCertificateStore,
  LoggedIssuance,
  LoggedIssuanceResult,
  SignatureLog,
} from '@pipeline/core/audit';
import type { DigestAlgorithm, Hsm, KeyType, PrivateKeyRef } from '@pipeline/core/shared';
import { buildCsr } from '@pipeline/der';
import { directAssertion, directAssertionVerifier } from '../../../scripts/local/idp/direct-assertions';
import {
  AlreadyCertifiedError,
  AssertionAlreadyUsedError,
  CertificateAuthority,
  PublicKeyAlreadyCertifiedError,
  SignerMismatchError,
  bootstrapCaHierarchy,
} from '../src';
import type { CaCertificates } from '@pipeline/core/pki';
import { IDENTITY, evidenceFor } from './helpers';

const DIGEST_INFO: Readonly<Record<DigestAlgorithm, string>> = {
  'SHA-256': '3031300d060960864801650304020105000420',
  'SHA-384': '3041300d060960864801650304020205000430',
  'SHA-512': '3051300d060960864801650304020305000440',
};

/** An HSM of Node's crypto: RSA key pairs, PKCS#1 v1.5 signatures over a digest (as CKM_RSA_PKCS). */
class NodeHsm implements Pick<
  Hsm,
  'generateKeyPair' | 'signDigest' | 'findPrivateKey' | 'findPublicKeySpki'
> {
  private readonly keys = new Map<string, { privateKey: KeyObject; spki: Buffer }>();
  private next = 0;

  public async generateKeyPair(keyType: KeyType, options: { tokenLabel?: string }) {
    const bits = Number(/^RSA-(\d+)$/.exec(keyType)?.[1]);
    if (!bits) throw new Error(`this fake makes RSA keys only, not ${keyType}`);
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
    const handle = Buffer.from(String(this.next++));
    const spki = publicKey.export({ type: 'spki', format: 'der' });
    this.keys.set(handle.toString(), { privateKey, spki });
    if (options.tokenLabel) this.keys.set(`label:${options.tokenLabel}`, { privateKey, spki });
    const ref: PrivateKeyRef = {
      handle,
      keyType,
      token: options.tokenLabel !== undefined,
      label: options.tokenLabel,
    };
    return { privateKey: ref, publicKeySpki: spki };
  }

  public async signDigest(key: PrivateKeyRef, digest: Buffer, options: { digestAlgorithm: DigestAlgorithm }) {
    const entry = this.keys.get(key.label ? `label:${key.label}` : key.handle.toString())!;
    const info = Buffer.concat([Buffer.from(DIGEST_INFO[options.digestAlgorithm], 'hex'), digest]);
    return privateEncrypt({ key: entry.privateKey, padding: constants.RSA_PKCS1_PADDING }, info);
  }

  public async findPrivateKey(label: string, keyType: KeyType) {
    return this.keys.has(`label:${label}`)
      ? { handle: Buffer.from(label), keyType, token: true, label }
      : undefined;
  }

  public async findPublicKeySpki(label: string) {
    return this.keys.get(`label:${label}`)?.spki;
  }
}

/** The certificate store's rules in memory (the DynamoDB repository is tested against DynamoDB Local). */
class MemoryCertificateStore implements IssuedCertificateStore, LoggedCertificateStore {
  public readonly byRequest = new Map<string, IssuedCertificateRecord>();
  public readonly serials = new Map<string, { requestId: string; revoked?: true; reason?: string }>();
  public readonly assertions = new Map<string, { requestId: string; attemptId?: string }>();
  public readonly publicKeys = new Map<string, { requestId: string; serialHex: string }>();
  /** Register entries written behind the CA's back between its read and its write (a race). */
  public onRecord?: (item: CertificateToRecord) => void;
  /** The audit log recordLogged commits its events to, with the certificates. */
  public events: AuditEvent[] = [];
  public lookups = 0;

  public async lookup(items: readonly IssuanceLookup[]): Promise<IssuanceState[]> {
    this.lookups++;
    return items.map((i) => ({
      ...(this.byRequest.has(i.requestId) ? { existing: this.byRequest.get(i.requestId) } : {}),
      ...(this.assertions.has(i.assertionKey) ? { assertionUse: this.assertions.get(i.assertionKey) } : {}),
      ...(this.publicKeys.has(i.publicKeyHash) ? { publicKeyUse: this.publicKeys.get(i.publicKeyHash) } : {}),
    }));
  }

  public async serialState(serialHex: string): Promise<SerialState> {
    const serial = this.serials.get(serialHex);
    return !serial ? 'unknown' : serial.revoked ? 'revoked' : 'valid';
  }

  /**
   * The repository's conditions on a request's record: absent, or for a replacement, the one it replaces,
   * replaced fewer than MAX_REPLACEMENTS times.
   */
  private requestRefuses(c: IssuedCertificateRecord): boolean {
    const existing = this.byRequest.get(c.requestId);
    if (c.supersedes === undefined) return existing !== undefined;
    return existing?.serialHex !== c.supersedes || (existing.replacements ?? 0) >= MAX_REPLACEMENTS;
  }

  /** A replacement's earlier serial must be on record and not revoked. */
  private previousRefuses(c: IssuedCertificateRecord): boolean {
    if (c.supersedes === undefined) return false;
    const previous = this.serials.get(c.supersedes);
    return !previous || previous.revoked === true;
  }

  /** One group, all or nothing, as DynamoDB's transaction of the items and the audit entry. */
  public async recordLogged(items: readonly LoggedIssuance[]): Promise<LoggedIssuanceResult[]> {
    items.forEach((i) => this.onRecord?.(i.record));
    const refused = items.map(
      ({ record: { certificate: c, registers: r } }) =>
        this.requestRefuses(c) ||
        this.previousRefuses(c) ||
        this.serials.has(c.serialHex) ||
        (this.assertions.get(r.assertionKey)?.requestId ?? c.requestId) !== c.requestId ||
        this.publicKeys.has(c.publicKeyHash),
    );
    if (refused.some(Boolean)) return refused.map((r) => (r ? 'refused' : 'cancelled'));
    for (const i of items) {
      this.write(i.record);
      if (i.revoked) this.events.push(i.revoked);
      this.events.push(i.event);
    }
    return items.map(() => 'stored');
  }

  private write({ certificate: c, registers: r }: CertificateToRecord): void {
    if (c.supersedes !== undefined) {
      this.serials.set(c.supersedes, { requestId: c.requestId, revoked: true, reason: 'superseded' });
    }
    this.byRequest.set(c.requestId, c);
    this.serials.set(c.serialHex, { requestId: c.requestId });
    this.assertions.set(r.assertionKey, { requestId: c.requestId, attemptId: c.attemptId });
    this.publicKeys.set(c.publicKeyHash, { requestId: c.requestId, serialHex: c.serialHex });
  }
}

const caConfig = {
  ...loadCaConfig({}),
  keyType: 'RSA-3072' as const,
  ocspKeyType: 'RSA-3072' as const,
  tsaKeyType: 'RSA-3072' as const,
};
const hsm = new NodeHsm();
let caCertificates: CaCertificates;

beforeAll(async () => {
  let stored: CaCertificates | undefined;
  await bootstrapCaHierarchy(hsm as unknown as Hsm, caConfig, {
    location: 'memory',
    read: async () => stored,
    readEach: async () => stored ?? {},
    write: async (c) => void (stored = c),
  });
  caCertificates = stored!;
}, 60_000);

interface Harness {
  readonly ca: CertificateAuthority;
  readonly store: MemoryCertificateStore;
  readonly events: AuditEvent[];
}

/** The audit log read back: the signatures its `made` lists (request id, key hash) were made since ever. */
class FakeSignatureLog implements SignatureLog {
  public readonly made: Array<{ requestId: string; keySpkiHash: string }> = [];
  public readonly queries: Array<{ requestId: string; keySpkiHash: string; since: number }> = [];
  public async signatureMade(query: { requestId: string; keySpkiHash: string; since: number }) {
    this.queries.push(query);
    return this.made.some((m) => m.requestId === query.requestId || m.keySpkiHash === query.keySpkiHash);
  }
}

async function harness(
  evidence: AssertionVerifier = directAssertionVerifier(),
  options: { signatures?: SignatureLog } = {},
): Promise<Harness> {
  const store = new MemoryCertificateStore();
  const events: AuditEvent[] = store.events;
  const audit: AuditSink = {
    append: async (event) => (await audit.appendMany([event]))[0],
    appendMany: async (batch) => {
      events.push(...batch);
      return batch.map(() => ({
        chain: 0,
        sequence: 0,
        hash: '00'.repeat(32),
        leafIndex: 0,
        treeSize: 1,
        path: [],
      }));
    },
  };
  const ca = await CertificateAuthority.create({
    hsm: hsm as unknown as Hsm,
    certificates: store,
    caCertificates,
    config: caConfig,
    evidence,
    audit,
    logged: store,
    ...(options.signatures ? { signatures: options.signatures } : {}),
  });
  return { ca, store, events };
}

/** A one-time RSA key and its CSR naming `subject`. */
async function keyAndCsr(subject: SignerIdentity = IDENTITY): Promise<{ csrDer: Buffer; spki: Buffer }> {
  const pair = await hsm.generateKeyPair('RSA-2048', {});
  const csrDer = await buildCsr({
    subject,
    keyType: 'RSA-2048',
    publicKeySpki: pair.publicKeySpki,
    sign: (digest, options) => hsm.signDigest(pair.privateKey, digest, options),
  });
  return { csrDer, spki: pair.publicKeySpki };
}

const evidence = (options: Parameters<typeof evidenceFor>[0] = {}) =>
  evidenceFor({ keyType: 'RSA-2048', ...options });
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const refusals = (events: readonly AuditEvent[]) =>
  events.flatMap((e) =>
    e.type === 'certificate.refused' ? [[e.requestId, e.code, e.serial !== undefined]] : [],
  );

test('certifies the person the verified assertion names, with the registers written beside the certificate', async () => {
  const { ca, store, events } = await harness();
  const { csrDer, spki } = await keyAndCsr();
  const request = evidence();
  const issued = await ca.issue({ ...request, csrDer });
  expect(store.byRequest.get(request.requestId)?.serialHex).toBe(issued.serialHex);
  expect(store.publicKeys.get(sha256(spki))).toEqual({
    requestId: request.requestId,
    serialHex: issued.serialHex,
  });
  expect([...store.assertions.values()]).toEqual([{ requestId: request.requestId }]);
  expect(events).toEqual([
    expect.objectContaining({
      type: 'certificate.issued',
      requestId: request.requestId,
      serial: issued.serialHex,
      keySpkiHash: sha256(spki),
      assertionHash: createHash('sha256').update(request.assertion).digest('hex'),
    }),
  ]);
});

test('a public key certified before is refused and audited, whatever request presents it', async () => {
  const { ca, store, events } = await harness();
  const { csrDer, spki } = await keyAndCsr();
  store.publicKeys.set(sha256(spki), { requestId: 'an-earlier-request', serialHex: 'ab' });
  const request = evidence();
  await expect(ca.issue({ ...request, csrDer })).rejects.toBeInstanceOf(PublicKeyAlreadyCertifiedError);
  // Refused by the write (nothing is read first): audited with the serial of the dropped leaf.
  expect(refusals(events)).toEqual([[request.requestId, 'PUBLIC_KEY_ALREADY_CERTIFIED', true]]);
  expect(store.byRequest.size).toBe(0);
});

test('an assertion certified for another request is refused and audited', async () => {
  const { ca, store, events } = await harness();
  const request = evidence();
  // The register entry of this very assertion (its replay key), owned by another request.
  const { replayKey } = await directAssertionVerifier().verify(
    request.assertion,
    assertionNonce(request.binding),
    {
      maxAgeSeconds: 600,
    },
  );
  store.assertions.set(replayKey, { requestId: 'another-request' });
  await expect(ca.issue({ ...request, csrDer: (await keyAndCsr()).csrDer })).rejects.toBeInstanceOf(
    AssertionAlreadyUsedError,
  );
  expect(refusals(events)).toEqual([[request.requestId, 'ASSERTION_ALREADY_USED', true]]);
  expect(store.byRequest.size).toBe(0);
});

test('the same key again is a retry; another key is refused, for the same attempt or a takeover', async () => {
  const { ca, store } = await harness();
  const request = evidence();
  const first = await keyAndCsr();
  const issued = await ca.issue({ ...request, csrDer: first.csrDer, attemptId: 'a1' });
  expect(await ca.issue({ ...request, csrDer: first.csrDer, attemptId: 'a1' })).toEqual(issued);
  const second = await keyAndCsr();
  for (const attemptId of ['a1', 'a2', undefined]) {
    await expect(ca.issue({ ...request, csrDer: second.csrDer, attemptId })).rejects.toBeInstanceOf(
      AlreadyCertifiedError,
    );
  }
  expect(store.byRequest.get(request.requestId)?.serialHex).toBe(issued.serialHex);
  // The first key stays certified once: it cannot come back for anything.
  await expect(ca.issue({ ...evidence(), csrDer: first.csrDer })).rejects.toBeInstanceOf(
    PublicKeyAlreadyCertifiedError,
  );
});

test('a certificate is released to its attempt as it is recorded: without the log read back (no evidence) a takeover gets no second one, nothing revoked', async () => {
  const { ca, store, events } = await harness();
  const key = async () => (await keyAndCsr()).csrDer;
  const crashed = evidence();
  const before = Date.now();
  const first = await ca.issue({ ...crashed, csrDer: await key(), attemptId: 'a1' });
  // Written with the certificate, in the same write: no later step lets the attempt sign.
  const recorded = store.byRequest.get(crashed.requestId)!;
  expect(recorded).toMatchObject({ serialHex: first.serialHex, attemptId: 'a1' });
  expect(recorded.releasedAt).toBeGreaterThanOrEqual(before);
  // a1 died before it signed; a2 took the request over with a new key: refused, and a3 after it.
  for (const attemptId of ['a2', 'a3']) {
    await expect(ca.issue({ ...crashed, csrDer: await key(), attemptId })).rejects.toMatchObject({
      code: 'ALREADY_CERTIFIED',
      message:
        'the sign request has a certificate that was released to be signed with (this CA replaces none)',
    });
  }
  expect(store.byRequest.get(crashed.requestId)).toEqual(recorded);
  expect(store.serials.get(first.serialHex)).toEqual({ requestId: crashed.requestId });
  expect(events.filter((e) => e.type === 'certificate.issued')).toHaveLength(1);
  expect(refusals(events)).toEqual([
    [crashed.requestId, 'ALREADY_CERTIFIED', true],
    [crashed.requestId, 'ALREADY_CERTIFIED', true],
  ]);

  // A revoked certificate the same: never replaced.
  const revokedRequest = evidence();
  const revoked = await ca.issue({ ...revokedRequest, csrDer: await key(), attemptId: 'a1' });
  store.serials.set(revoked.serialHex, { requestId: revokedRequest.requestId, revoked: true });
  await expect(ca.issue({ ...revokedRequest, csrDer: await key(), attemptId: 'a2' })).rejects.toBeInstanceOf(
    AlreadyCertifiedError,
  );
  expect(store.serials.get(revoked.serialHex)).toEqual({
    requestId: revokedRequest.requestId,
    revoked: true,
  });
});

describe('a takeover whose certificate signed nothing that left the service', () => {
  const key = async () => (await keyAndCsr()).csrDer;
  const setUp = async () => {
    const signatures = new FakeSignatureLog();
    const h = await harness(directAssertionVerifier(), { signatures });
    const crashed = evidence();
    const first = await h.ca.issue({ ...crashed, csrDer: await key(), attemptId: 'a1' });
    return { ...h, signatures, crashed, first, firstRecord: h.store.byRequest.get(crashed.requestId)! };
  };
  const issuedSerials = (events: readonly AuditEvent[]) =>
    events.flatMap((e) => (e.type === 'certificate.issued' ? [e.serial] : []));

  test('gets a replacement: the first serial revoked superseded in the same write, the revocation logged before the issuance', async () => {
    const { ca, store, events, signatures, crashed, first, firstRecord } = await setUp();
    const retry = await key();
    const second = await ca.issue({ ...crashed, csrDer: retry, attemptId: 'a2' });
    expect(second.serialHex).not.toBe(first.serialHex);
    // The evidence asked for: the request's signatures, or the first key's, since (a margin before) its issuance.
    expect(signatures.queries).toEqual([
      {
        requestId: crashed.requestId,
        keySpkiHash: firstRecord.publicKeyHash,
        since: firstRecord.issuedAt - 60_000,
      },
    ]);
    expect(store.byRequest.get(crashed.requestId)).toMatchObject({
      serialHex: second.serialHex,
      attemptId: 'a2',
      supersedes: first.serialHex,
      replacements: 1,
    });
    expect(store.serials.get(first.serialHex)).toEqual({
      requestId: crashed.requestId,
      revoked: true,
      reason: 'superseded',
    });
    expect(store.serials.get(second.serialHex)).toEqual({ requestId: crashed.requestId });
    // Exactly two issuances for the request, the earlier serial revoked `superseded` between them.
    expect(events.filter((e) => e.type !== 'certificate.refused')).toEqual([
      expect.objectContaining({ type: 'certificate.issued', serial: first.serialHex }),
      {
        type: 'certificate.revoked',
        serial: first.serialHex,
        reason: 'superseded',
        requestId: crashed.requestId,
      },
      expect.objectContaining({ type: 'certificate.issued', serial: second.serialHex }),
    ]);
    // The replacement's own retry (same key) gets it back; nothing more is issued or revoked.
    expect(await ca.issue({ ...crashed, csrDer: retry, attemptId: 'a2' })).toEqual(second);
    expect(issuedSerials(events)).toEqual([first.serialHex, second.serialHex]);
    expect(signatures.queries).toHaveLength(1);
  });

  test('each later takeover gets a replacement of the last, up to MAX_REPLACEMENTS; then none, whatever the log says', async () => {
    const { ca, store, events, crashed, first } = await setUp();
    const serials = [first.serialHex];
    for (let n = 1; n <= MAX_REPLACEMENTS; n += 1) {
      const next = await ca.issue({ ...crashed, csrDer: await key(), attemptId: `a${n + 1}` });
      expect(store.byRequest.get(crashed.requestId)).toMatchObject({
        serialHex: next.serialHex,
        supersedes: serials[serials.length - 1],
        replacements: n,
      });
      serials.push(next.serialHex);
    }
    // Every certificate but the last revoked superseded; the last stands.
    expect(serials.map((serial) => store.serials.get(serial)?.reason)).toEqual([
      ...serials.slice(1).map(() => 'superseded'),
      undefined,
    ]);
    await expect(ca.issue({ ...crashed, csrDer: await key(), attemptId: 'a9' })).rejects.toMatchObject({
      code: 'ALREADY_CERTIFIED',
      message: expect.stringContaining(`it was replaced ${MAX_REPLACEMENTS} times`),
    });
    expect(issuedSerials(events)).toEqual(serials);
    expect(store.byRequest.get(crashed.requestId)?.serialHex).toBe(serials[serials.length - 1]);
  });

  test('a signature made for the request (or with the key) is in the log: refused, nothing revoked', async () => {
    const { ca, store, events, signatures, crashed, first, firstRecord } = await setUp();
    signatures.made.push({ requestId: crashed.requestId, keySpkiHash: 'f'.repeat(64) });
    await expect(ca.issue({ ...crashed, csrDer: await key(), attemptId: 'a2' })).rejects.toMatchObject({
      code: 'ALREADY_CERTIFIED',
      message: expect.stringContaining('a signature was made with it'),
    });
    signatures.made.splice(0, 1, { requestId: 'another', keySpkiHash: firstRecord.publicKeyHash });
    await expect(ca.issue({ ...crashed, csrDer: await key(), attemptId: 'a3' })).rejects.toBeInstanceOf(
      AlreadyCertifiedError,
    );
    expect(store.byRequest.get(crashed.requestId)).toEqual(firstRecord);
    expect(store.serials.get(first.serialHex)).toEqual({ requestId: crashed.requestId });
    expect(issuedSerials(events)).toEqual([first.serialHex]);
    expect(events.some((e) => e.type === 'certificate.revoked')).toBe(false);
  });

  test('a revoked certificate is never replaced: no revocation is undone by a new certificate', async () => {
    const { ca, store, events, crashed, first } = await setUp();
    store.serials.set(first.serialHex, {
      requestId: crashed.requestId,
      revoked: true,
      reason: 'unspecified',
    });
    await expect(ca.issue({ ...crashed, csrDer: await key(), attemptId: 'a2' })).rejects.toMatchObject({
      code: 'ALREADY_CERTIFIED',
      message: expect.stringContaining('it is revoked'),
    });
    expect(store.serials.get(first.serialHex)).toMatchObject({ revoked: true, reason: 'unspecified' });
    expect(store.byRequest.get(crashed.requestId)?.serialHex).toBe(first.serialHex);
    expect(issuedSerials(events)).toEqual([first.serialHex]);
  });

  test('revoked between the check and the write (a race): the write is refused, nothing stored, the dropped leaf audited', async () => {
    const { ca, store, events, crashed, first } = await setUp();
    store.onRecord = (item) => {
      if (item.certificate.supersedes === first.serialHex) {
        store.serials.set(first.serialHex, {
          requestId: crashed.requestId,
          revoked: true,
          reason: 'keyCompromise',
        });
      }
    };
    await expect(ca.issue({ ...crashed, csrDer: await key(), attemptId: 'a2' })).rejects.toBeInstanceOf(
      AlreadyCertifiedError,
    );
    expect(store.serials.get(first.serialHex)).toMatchObject({ reason: 'keyCompromise' });
    expect(store.byRequest.get(crashed.requestId)?.serialHex).toBe(first.serialHex);
    expect(store.serials.size).toBe(1);
    expect(refusals(events)).toEqual([[crashed.requestId, 'ALREADY_CERTIFIED', true]]);
    // Nothing of the refused write reached the log: one issuance, no revocation.
    expect(events.filter((e) => e.type !== 'certificate.refused')).toEqual([
      expect.objectContaining({ type: 'certificate.issued', serial: first.serialHex }),
    ]);
  });

  test('the same attempt with another key is no takeover: refused, nothing read from the log', async () => {
    const { ca, signatures, crashed } = await setUp();
    for (const attemptId of ['a1', undefined]) {
      await expect(ca.issue({ ...crashed, csrDer: await key(), attemptId })).rejects.toMatchObject({
        code: 'ALREADY_CERTIFIED',
      });
    }
    expect(signatures.queries).toEqual([]);
  });
});

test('a register that refuses at write time (a race) refuses the request; the unreleased serial is in the audit event', async () => {
  const { ca, store, events } = await harness();
  const { csrDer, spki } = await keyAndCsr();
  let dropped: string | undefined;
  store.onRecord = (item) => {
    dropped = item.certificate.serialHex;
    store.publicKeys.set(sha256(spki), { requestId: 'raced', serialHex: 'cd' });
  };
  const request = evidence();
  await expect(ca.issue({ ...request, csrDer })).rejects.toBeInstanceOf(PublicKeyAlreadyCertifiedError);
  expect(refusals(events)).toEqual([[request.requestId, 'PUBLIC_KEY_ALREADY_CERTIFIED', true]]);
  expect(events.filter((e) => e.type === 'certificate.issued')).toEqual([]);
  expect(events.find((e) => e.type === 'certificate.refused')).toMatchObject({ serial: dropped });
});

test('a CSR naming another person than the assertion is refused: the subject is never taken from a record', async () => {
  const { ca, events } = await harness();
  const other = { ...IDENTITY, commonName: 'Karl Svensson', givenName: 'Karl', surname: 'Svensson' };
  const request = evidence();
  await expect(ca.issue({ ...request, csrDer: (await keyAndCsr(other)).csrDer })).rejects.toBeInstanceOf(
    SignerMismatchError,
  );
  expect(refusals(events)).toEqual([[request.requestId, 'SIGNER_MISMATCH', false]]);
});

test.each<[string, Parameters<typeof evidenceFor>[0], string]>([
  [
    'what will be signed changed',
    { binding: { digest: Buffer.alloc(32, 3).toString('base64') } },
    'ASSERTION_BINDING_MISMATCH',
  ],
  ['the format changed', { binding: { format: 'cms', profile: 'PAdES-B-B' } }, 'ASSERTION_BINDING_MISMATCH'],
  ['the key type changed', { binding: { keyType: 'RSA-3072' } }, 'KEY_MISMATCH'],
  [
    'an old session',
    { claims: { auth_time: Math.floor(Date.now() / 1000) - 600 } },
    'ASSERTION_LOGIN_NOT_FRESH',
  ],
  [
    'older than a request may wait',
    {
      claims: {
        iat: Math.floor(Date.now() / 1000) - 1200,
        auth_time: Math.floor(Date.now() / 1000) - 1200,
        exp: Math.floor(Date.now() / 1000) - 900,
      },
    },
    'ASSERTION_STALE',
  ],
])('refused when %s, audited, nothing signed', async (_what, options, code) => {
  const { ca, store, events } = await harness();
  const request = evidence(options);
  await expect(ca.issue({ ...request, csrDer: (await keyAndCsr()).csrDer })).rejects.toMatchObject({ code });
  expect(refusals(events)).toEqual([[request.requestId, code, false]]);
  expect(events.filter((e) => e.type === 'certificate.issued')).toEqual([]);
  expect(store.byRequest.size).toBe(0);
});

describe('a request with a sign message', () => {
  const MESSAGE = { text: 'Jag godkänner', mimeType: 'text/plain' } as const;
  const HASH = createHash('sha256').update('text/plain\nJag godkänner').digest('hex');

  test("certifies on the provider's approval of the message; the audit event records the message's hash", async () => {
    const { ca, events } = await harness();
    const request = evidence({ signMessage: MESSAGE });
    await ca.issue({ ...request, csrDer: (await keyAndCsr()).csrDer });
    expect(events.find((e) => e.type === 'certificate.issued')).toMatchObject({
      requestId: request.requestId,
      signMessageHash: HASH,
    });
  });

  test.each<[string, Parameters<typeof evidenceFor>[0], string]>([
    [
      'the stored message changed after the login',
      { signMessage: MESSAGE, binding: { signMessageHash: 'ab'.repeat(32) } },
      'ASSERTION_BINDING_MISMATCH',
    ],
    [
      'the message was removed from the record',
      { signMessage: MESSAGE, binding: { signMessageHash: undefined } },
      'ASSERTION_BINDING_MISMATCH',
    ],
    [
      'the provider displayed another message',
      { signMessage: MESSAGE, approval: { sign_message_hash: 'cd'.repeat(32) } },
      'ASSERTION_APPROVAL_MISMATCH',
    ],
    [
      'the token carries no approval',
      { signMessage: MESSAGE, claims: { 'https://id.oidc.se/claim/userSignature': undefined } },
      'ASSERTION_APPROVAL_MISSING',
    ],
    // Approved by the provider, yet outside the sign message rules (a provider that shows anything).
    [
      'the message has a direction mark',
      { signMessage: { text: 'Jag \u200egodkänner', mimeType: 'text/plain' } },
      'SIGN_MESSAGE_INVALID',
    ],
    [
      'the message has a zero-width space',
      { signMessage: { text: 'Jag\u200bgodkänner', mimeType: 'text/plain' } },
      'SIGN_MESSAGE_INVALID',
    ],
    [
      'the message is only invisible characters',
      { signMessage: { text: '\u3164\u2060', mimeType: 'text/plain' } },
      'SIGN_MESSAGE_INVALID',
    ],
    [
      'the message has a tag character',
      { signMessage: { text: 'Jag godkänner\u{e0041}', mimeType: 'text/plain' } },
      'SIGN_MESSAGE_INVALID',
    ],
    [
      'the record names a message hash and the message does not come',
      { signMessageHash: HASH },
      'SIGN_MESSAGE_INVALID',
    ],
  ])('refused when %s, audited, nothing signed', async (_what, options, code) => {
    const { ca, store, events } = await harness();
    const request = evidence(options);
    await expect(ca.issue({ ...request, csrDer: (await keyAndCsr()).csrDer })).rejects.toMatchObject({
      code,
    });
    expect(refusals(events)).toEqual([[request.requestId, code, false]]);
    expect(store.byRequest.size).toBe(0);
  });
});

test('an identity provider whose keys cannot be read is not a refusal: the caller may retry, nothing is audited', async () => {
  const down: AssertionVerifier = {
    verify: async () => Promise.reject(new IdentityProviderUnavailableError('keys unavailable')),
  };
  const { ca, events } = await harness(down);
  await expect(ca.issue({ ...evidence(), csrDer: (await keyAndCsr()).csrDer })).rejects.toBeInstanceOf(
    IdentityProviderUnavailableError,
  );
  expect(events).toEqual([]);
});

test('a batch: each item decided on its own evidence, repeats within the batch take the single rules', async () => {
  const { ca } = await harness();
  const shared = evidence();
  const tampered = evidence({ binding: { digest: Buffer.alloc(32, 4).toString('base64') } });
  const fresh = evidence();
  const outcomes = await ca.issueMany([
    { ...shared, csrDer: (await keyAndCsr()).csrDer },
    { ...shared, csrDer: (await keyAndCsr()).csrDer },
    { ...tampered, csrDer: (await keyAndCsr()).csrDer },
    { ...fresh, csrDer: (await keyAndCsr()).csrDer },
  ]);
  expect(outcomes.map((o) => (o.ok ? 'issued' : (o.error as { code: string }).code))).toEqual([
    'issued',
    'ALREADY_CERTIFIED',
    'ASSERTION_BINDING_MISMATCH',
    'issued',
  ]);
});

describe('a request with documents: the CA recomputes the manifest and composes the sign message', () => {
  const MESSAGE = { text: 'Jag ansöker om bygglov.', mimeType: 'text/plain' } as const;
  const DOCUMENTS: ManifestDocument[] = [
    {
      name: 'ritning.pdf',
      digest: Buffer.alloc(32, 1).toString('base64'),
      digestAlgorithm: 'SHA-256',
      format: 'cms',
      profile: 'PAdES-B-B',
    },
    { digest: Buffer.alloc(32, 2).toString('base64'), digestAlgorithm: 'SHA-256', format: 'raw' },
    {
      name: 'intyg.txt',
      digest: Buffer.alloc(32, 3).toString('base64'),
      digestAlgorithm: 'SHA-256',
      format: 'cms',
      profile: 'CAdES-B-B',
    },
  ];

  /**
   * The record as the API stores it, its login (direct IdP, with the approval) and the CA's input; with
   * `formatOpen`, a login that approved the documents in any format.
   */
  function documentsRequest(formatOpen = false) {
    const record = {
      id: randomUUID(),
      digest: Buffer.from(manifestHash(DOCUMENTS, formatOpen), 'base64url').toString('base64'),
      digestAlgorithm: 'SHA-256' as const,
      keyType: 'RSA-2048' as const,
      signatureAlgorithm: 'RSASSA-PKCS1-v1_5' as const,
      signer: IDENTITY,
      documents: DOCUMENTS,
      signMessageHash: signMessageHash(composeSignMessage(MESSAGE, DOCUMENTS)),
      ...(formatOpen ? { formatOpen } : {}),
    };
    return {
      requestId: record.id,
      assertion: directAssertion(record),
      binding: requestBindingOf(record) as ManifestBinding,
      signMessage: MESSAGE,
    };
  }

  test('certifies on the approval of the composed message for the manifestHash; the audit event records its hash', async () => {
    const { ca, events } = await harness();
    const request = documentsRequest();
    await ca.issue({ ...request, csrDer: (await keyAndCsr()).csrDer });
    expect(events.find((e) => e.type === 'certificate.issued')).toMatchObject({
      requestId: request.requestId,
      signMessageHash: signMessageHash(composeSignMessage(MESSAGE, DOCUMENTS)),
    });
  });

  test.each<[string, (d: ManifestDocument[]) => ManifestDocument[]]>([
    ['a document added', (d) => [...d, { ...d[1], digest: Buffer.alloc(32, 9).toString('base64') }]],
    ['a document removed', (d) => d.slice(1)],
    ['the documents reordered', (d) => [d[2], d[1], d[0]]],
    ['a digest changed', (d) => [{ ...d[0], digest: Buffer.alloc(32, 8).toString('base64') }, d[1], d[2]]],
  ])(
    'refused when %s on the record after the login: ASSERTION_BINDING_MISMATCH, audited, nothing certified',
    async (_, change) => {
      const { ca, store, events } = await harness();
      const request = documentsRequest();
      const binding = { ...request.binding, documents: change([...request.binding.documents]) };
      await expect(
        ca.issue({ ...request, binding, csrDer: (await keyAndCsr()).csrDer }),
      ).rejects.toMatchObject({
        code: 'ASSERTION_BINDING_MISMATCH',
      });
      expect(refusals(events)).toEqual([[request.requestId, 'ASSERTION_BINDING_MISMATCH', false]]);
      expect(store.byRequest.size).toBe(0);
    },
  );

  test('a login that approved the documents in any format certifies them in the format the record names; the format opened or bound on the record after the login is refused', async () => {
    const { ca, store } = await harness();
    const bound = documentsRequest();
    const open = { ...bound.binding, formatOpen: true as const };
    // Opened after a bound login: another nonce.
    await expect(
      ca.issue({ ...bound, binding: open, csrDer: (await keyAndCsr()).csrDer }),
    ).rejects.toMatchObject({ code: 'ASSERTION_BINDING_MISMATCH' });
    // An open login: whatever format each document is signed in, it is what the citizen approved.
    const openLogin = documentsRequest(true);
    const asRaw = DOCUMENTS.map((d) => ({ ...d, format: 'raw' as const, profile: undefined }));
    const binding = { ...openLogin.binding, documents: asRaw };
    // Bound after an open login: another nonce.
    await expect(
      ca.issue({
        ...openLogin,
        binding: { ...binding, formatOpen: undefined },
        csrDer: (await keyAndCsr()).csrDer,
      }),
    ).rejects.toMatchObject({ code: 'ASSERTION_BINDING_MISMATCH' });
    expect(store.byRequest.size).toBe(0);
    await ca.issue({ ...openLogin, binding, csrDer: (await keyAndCsr()).csrDer });
    expect(store.byRequest.size).toBe(1);
  });

  test("refused when the e-service's text is changed on the record (its composition no longer hashes as bound)", async () => {
    const { ca, store } = await harness();
    const request = documentsRequest();
    const signMessage = { ...MESSAGE, text: 'Jag godkänner allt.' };
    await expect(
      ca.issue({ ...request, signMessage, csrDer: (await keyAndCsr()).csrDer }),
    ).rejects.toMatchObject({
      code: 'ASSERTION_BINDING_MISMATCH',
    });
    expect(store.byRequest.size).toBe(0);
  });
});

describe('with the logged store: the certificate and its event in one write, no read first', () => {
  test('a first issuance reads nothing and writes the certificate with its event', async () => {
    const { ca, store, events } = await harness(directAssertionVerifier());
    const request = evidence();
    const [outcome] = await ca.issueMany([{ ...request, csrDer: (await keyAndCsr()).csrDer }]);
    if (!outcome.ok) throw outcome.error;
    expect(store.lookups).toBe(0);
    expect(store.byRequest.get(request.requestId)?.serialHex).toBe(outcome.certificate.serialHex);
    expect(events).toEqual([
      expect.objectContaining({ type: 'certificate.issued', serial: outcome.certificate.serialHex }),
    ]);
  });

  test('an assertion certified for another request: the write is refused, read back, refused and audited with the dropped serial', async () => {
    const { ca, store, events } = await harness(directAssertionVerifier());
    const request = evidence();
    const { replayKey } = await directAssertionVerifier().verify(
      request.assertion,
      assertionNonce(request.binding),
      { maxAgeSeconds: 600 },
    );
    store.assertions.set(replayKey, { requestId: 'another-request' });
    let dropped: string | undefined;
    store.onRecord = (item) => (dropped = item.certificate.serialHex);
    await expect(ca.issue({ ...request, csrDer: (await keyAndCsr()).csrDer })).rejects.toBeInstanceOf(
      AssertionAlreadyUsedError,
    );
    expect(store.lookups).toBe(1);
    expect(events).toEqual([
      expect.objectContaining({
        type: 'certificate.refused',
        code: 'ASSERTION_ALREADY_USED',
        serial: dropped,
      }),
    ]);
    expect(store.byRequest.size).toBe(0);
  });

  test('a serial refused with nothing else against the request is drawn again once; twice, SerialCollisionError', async () => {
    const once = await harness(directAssertionVerifier());
    let collisions = 1;
    once.store.onRecord = (item) => {
      if (collisions-- > 0) once.store.serials.set(item.certificate.serialHex, { requestId: 'other' });
    };
    const issued = await once.ca.issue({ ...evidence(), csrDer: (await keyAndCsr()).csrDer });
    expect(once.events.filter((e) => e.type === 'certificate.issued')).toEqual([
      expect.objectContaining({ serial: issued.serialHex }),
    ]);

    const twice = await harness(directAssertionVerifier());
    twice.store.onRecord = (item) =>
      void twice.store.serials.set(item.certificate.serialHex, { requestId: 'other' });
    const [outcome] = await twice.ca.issueMany([{ ...evidence(), csrDer: (await keyAndCsr()).csrDer }]);
    expect(outcome).toMatchObject({ ok: false, error: expect.any(SerialCollisionError) });
    expect(twice.events).toEqual([]);
    expect(twice.store.byRequest.size).toBe(0);
  });
});
