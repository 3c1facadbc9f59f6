/**
 * Integration tests of the signing core against DynamoDB Local (pool, request and certificate tables),
 * the SoftHSM token, the real CSR builder (lambdas/der) and the real CA (lambdas/ca, keys made by the
 * bootstrap). Every signature is checked with openssl against the public key of the certificate that
 * came back, and certificates against the CA chain.
 *
 * The 200-key run uses EC-P256 (SoftHSM keygen ~1 ms; 200 RSA-2048 keys would take ~50 s here); RSA-2048
 * with both RSA schemes is covered by a smaller run.
 */
import { X509Certificate, randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  CertificateRepository,
  type KeyPoolRepository,
  type RequestRepository,
} from '@pipeline/adapters/dynamodb';
import type { AuditRepository } from '../../adapters/dynamodb/src/audit-repository';
import type { Pkcs11Hsm } from '@pipeline/adapters/hsm';
import type { CertificateAuthority } from '@pipeline/ca';
import { loadConfig } from '@pipeline/config';
import { buildCsr } from '@pipeline/der';
import { storedPoolKeys } from '../../test-support/dynamodb';
import { sampleSignRequestRecord } from '../../../scripts/local/sample-sign-request';
import { opensslVerifyChain, opensslVerifyDigest } from '../../../scripts/local/verify/openssl';
import { createTestSigningStack, type TestSigningStack } from '../../../scripts/local/signing-stack';
import { createLocalCa } from '../../../scripts/local/local-ca';
import { AuditLog } from '@pipeline/audit';
import {
  HsmBusyError,
  HsmError,
  PipelineError,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
} from '../src/shared';
import { InMemoryPoolMetrics, fillPool, type EmptyPoolPolicy, type PoolHsm } from '../src/pool';
import {
  RequestInProgressError,
  RequestNotFoundError,
  processSignRequest,
  type SignOutcome,
  type SignRequestRecord,
  type SigningDeps,
} from '../src/signing';
import { bindingOf } from '../src/identity';
import { eventsOf, keyUsage, signatureMadeEvent, verifyAuditLog, type AuditSink } from '../src/audit';
import type { CertificateIssuer } from '../src/pki';

const config = loadConfig(process.env);
const SHARDS = 4;
let hsm: Pkcs11Hsm;
let doc: DynamoDBDocumentClient;
let pool: KeyPoolRepository;
let requests: RequestRepository;
let issuer: CertificateAuthority;
let chain: { rootPem: string; issuingPem: string };
let poolTable: string;
let auditStore: AuditRepository;
let audit: AuditLog;

let stack: TestSigningStack;

beforeAll(async () => {
  stack = await createTestSigningStack({ poolShards: SHARDS });
  ({ hsm, doc, pool, requests, issuer, auditStore } = stack);
  audit = new AuditLog(auditStore, { chains: 4 });
  poolTable = stack.tables.keyPool;
  chain = stack.caCertificates;
});

afterAll(async () => {
  await stack?.close();
});

function deps(
  overrides: { policy?: EmptyPoolPolicy; hsm?: PoolHsm; issuer?: CertificateIssuer; audit?: AuditSink } = {},
): SigningDeps & { metrics: InMemoryPoolMetrics } {
  return {
    requests,
    pool,
    hsm: overrides.hsm ?? hsm,
    buildCsr,
    issuer: overrides.issuer ?? issuer,
    audit: overrides.audit ?? audit,
    metrics: new InMemoryPoolMetrics(),
    sleep: async () => undefined,
    settings: {
      emptyPoolPolicy: overrides.policy ?? 'fallback',
      retryAfterSeconds: 30,
      leaseMs: 30_000,
      hsmProfile: config.hsm.profile,
    },
  };
}

async function fill(keyType: KeyType, count: number): Promise<void> {
  const result = await fillPool(
    { hsm, pool, metrics: new InMemoryPoolMetrics() },
    {
      keyType,
      count,
      parallelism: 2,
      deadline: Date.now() + 120_000,
      wrapKeyLabel: config.hsm.wrapKeyLabel,
      hsmProfile: config.hsm.profile,
      maxAgeSeconds: 3600,
    },
  );
  expect(result.stored).toBe(count);
}

async function available(keyType: KeyType): Promise<number> {
  return (await pool.available([keyType]))[keyType];
}

/** SPKIs of every stored key of a type, straight from the table (the test's own oracle). */
async function storedSpkis(keyType: KeyType): Promise<string[]> {
  return (await storedPoolKeys(doc, poolTable, keyType, SHARDS)).map((key) =>
    Buffer.from(key.publicKeySpki as Uint8Array).toString('base64'),
  );
}

async function newRequest(
  keyType: KeyType,
  signatureAlgorithm: SignatureAlgorithm = keyType.startsWith('EC') ? 'ECDSA' : 'RSASSA-PKCS1-v1_5',
  digestAlgorithm: DigestAlgorithm = 'SHA-256',
): Promise<SignRequestRecord> {
  const record = sampleSignRequestRecord({ keyType, signatureAlgorithm, digestAlgorithm });
  await requests.create(record);
  return record;
}

function certificateSpki(pem: string): Buffer {
  return new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
}

/** The signature verifies (openssl) against the public key of the certificate issued with it. */
function verifiesWithOpenssl(request: SignRequestRecord, outcome: SignOutcome): boolean {
  const record = outcome.record;
  return opensslVerifyDigest({
    publicKeySpki: certificateSpki(record.certificate!),
    digest: Buffer.from(request.digest, 'base64'),
    signature: Buffer.from(record.signature!, 'base64'),
    digestAlgorithm: request.digestAlgorithm,
    signatureAlgorithm: request.signatureAlgorithm,
  });
}

describe('200 pool keys, 20 concurrent signers', () => {
  const keyType: KeyType = 'EC-P256';

  test('every request is signed with its own pool key, used exactly once, and verifies', async () => {
    await fill(keyType, 200);
    const poolSpkis = await storedSpkis(keyType);
    expect(poolSpkis).toHaveLength(200);
    const objectsBefore = await hsm.countSessionObjects();

    const made = await Promise.all(Array.from({ length: 200 }, () => newRequest(keyType)));
    const queue = [...made];
    const outcomes = new Map<string, SignOutcome>();
    const signing = deps();
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          outcomes.set(next.id, await processSignRequest(signing, next.id));
        }
      }),
    );

    expect(outcomes.size).toBe(200);
    const usedSpkis: string[] = [];
    for (const request of made) {
      const outcome = outcomes.get(request.id)!;
      expect(outcome).toMatchObject({ status: 'signed', replayed: false });
      expect(outcome.record).toMatchObject({ status: 'signed', pooledKey: true });
      expect(outcome.record.startedAt).toBeLessThanOrEqual(outcome.record.keyAcquiredAt!);
      expect(outcome.record.keyAcquiredAt).toBeLessThanOrEqual(outcome.record.finishedAt!);
      expect(verifiesWithOpenssl(request, outcome)).toBe(true);
      usedSpkis.push(certificateSpki(outcome.record.certificate!).toString('base64'));
    }
    // Exactly the 200 pool keys, each once: no key twice, no key from elsewhere.
    expect(new Set(usedSpkis).size).toBe(200);
    expect([...usedSpkis].sort()).toEqual([...poolSpkis].sort());
    expect(signing.metrics.counter('KeysClaimed', keyType)).toBe(200);
    expect(signing.metrics.counter('OnTheFlyFallbacks', keyType)).toBe(0);
    // The audit log says the same: each of these requests claimed, used and destroyed its own key, and
    // the log's chains verify.
    const log = await auditStore.readAll();
    const mine = new Set(made.map((r) => r.id));
    const events = eventsOf(log).filter((e) => 'requestId' in e && mine.has(e.requestId ?? ''));
    const usage = keyUsage(events);
    expect(usage).toMatchObject({ claimed: 200, destroyed: 200, signatures: 200, discarded: 0, reused: [] });
    expect([...usage.requestsByKey.keys()].filter((k) => !k.startsWith('spki:'))).toHaveLength(200);
    expect([...usage.requestsByKey.keys()].filter((k) => k.startsWith('spki:'))).toHaveLength(200);
    expect(verifyAuditLog({ ...log, chains: 4 }, undefined).intact).toBe(true);
    // Each record says where its time went (an EC signature can take under a millisecond: >= 0).
    for (const request of made) {
      const stageMs = outcomes.get(request.id)!.record.stageMs ?? {};
      expect(Object.keys(stageMs).sort()).toEqual([
        'audit',
        'claim',
        'csr',
        'destroy',
        'issue',
        'sign',
        'unwrap',
      ]);
      for (const ms of Object.values(stageMs)) expect(ms).toBeGreaterThanOrEqual(0);
    }
    expect(await available(keyType)).toBe(0);
    expect(await hsm.countSessionObjects()).toBe(objectsBefore);

    for (const request of made.slice(0, 5)) {
      const record = outcomes.get(request.id)!.record;
      const verdict = opensslVerifyChain({
        rootPem: chain.rootPem,
        intermediatePems: [chain.issuingPem],
        leafPem: record.certificate!,
      });
      expect(verdict.ok).toBe(true);
      expect(record.chain).toEqual(
        [chain.issuingPem, chain.rootPem].map((p) => expect.stringContaining(p.trim())),
      );
    }
  }, 180_000);

  test('the 201st request under `fallback` is signed with a key generated on the fly', async () => {
    const request = await newRequest(keyType);
    const signing = deps({ policy: 'fallback' });
    const outcome = await processSignRequest(signing, request.id);
    expect(outcome.status).toBe('signed');
    expect(outcome.record.pooledKey).toBe(false);
    expect(verifiesWithOpenssl(request, outcome)).toBe(true);
    expect(signing.metrics.counter('OnTheFlyFallbacks', keyType)).toBe(1);
  });

  test('the 201st request under `reject` fails POOL_EMPTY with a retry hint and touches no HSM', async () => {
    const request = await newRequest(keyType);
    const signing = deps({ policy: 'reject' });
    const outcome = await processSignRequest(signing, request.id);
    expect(outcome).toMatchObject({ status: 'failed', replayed: false, retryAfterSeconds: 30 });
    expect(outcome.record.error?.code).toBe('POOL_EMPTY');
    expect(outcome.record.finishedAt).toBeDefined();
    expect(signing.metrics.counter('PoolEmptyRejections', keyType)).toBe(1);
    expect(outcome.record.certificate).toBeUndefined();
    // Terminal: a redelivery replays the failure.
    expect(await processSignRequest(signing, request.id)).toMatchObject({ status: 'failed', replayed: true });
  });
});

describe('RSA-2048 pool keys', () => {
  test.each([
    ['RSASSA-PKCS1-v1_5', 'SHA-256'],
    ['RSASSA-PSS', 'SHA-256'],
    ['RSASSA-PKCS1-v1_5', 'SHA-512'],
  ] as const)('%s %s signatures verify against the issued certificate', async (scheme, digest) => {
    await fill('RSA-2048', 1);
    const request = await newRequest('RSA-2048', scheme, digest);
    const outcome = await processSignRequest(deps(), request.id);
    expect(outcome.record).toMatchObject({ status: 'signed', pooledKey: true });
    expect(verifiesWithOpenssl(request, outcome)).toBe(true);
  });
});

describe('redelivery', () => {
  const keyType: KeyType = 'EC-P384';

  test('sequential: the second delivery returns the stored result; one key, one certificate', async () => {
    await fill(keyType, 3);
    const request = await newRequest(keyType);
    const first = await processSignRequest(deps(), request.id);
    const second = await processSignRequest(deps(), request.id);
    expect(first).toMatchObject({ status: 'signed', replayed: false });
    expect(second).toMatchObject({ status: 'signed', replayed: true });
    expect(second.record.signature).toBe(first.record.signature);
    expect(second.record.certificate).toBe(first.record.certificate);
    expect(await available(keyType)).toBe(2);
  });

  test('concurrent: six deliveries at once yield one signature, one certificate, one key', async () => {
    const before = await available(keyType);
    const request = await newRequest(keyType);
    const settled = await Promise.allSettled(
      Array.from({ length: 6 }, () => processSignRequest(deps(), request.id)),
    );
    const fresh = settled.filter((s) => s.status === 'fulfilled' && !s.value.replayed);
    expect(fresh).toHaveLength(1);
    for (const s of settled) {
      if (s.status === 'rejected') expect(s.reason).toBeInstanceOf(RequestInProgressError);
      else expect(s.value.status).toBe('signed');
    }
    const signatures = new Set(
      settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value.record.signature] : [])),
    );
    expect(signatures.size).toBe(1);
    expect(await available(keyType)).toBe(before - 1);
    const later = await processSignRequest(deps(), request.id);
    expect(later).toMatchObject({ status: 'signed', replayed: true });
    expect(verifiesWithOpenssl(request, later)).toBe(true);
  });

  test('an unknown request id is refused and consumes no key', async () => {
    const before = await available(keyType);
    await expect(processSignRequest(deps(), randomUUID())).rejects.toBeInstanceOf(RequestNotFoundError);
    expect(await available(keyType)).toBe(before);
  });

  describe('an attempt that died between its certificate and its signature (the CA reads the audit log back)', () => {
    let replacing: CertificateAuthority;
    beforeAll(async () => {
      // Wired as the CA function: its certificates logged in the same audit log the signer appends to,
      // and that log read back for a takeover's evidence.
      ({ issuer: replacing } = await createLocalCa({
        hsm,
        doc,
        certificatesTable: stack.tables.certificates,
        audit,
      }));
    });

    /** A request whose attempt `died` got its certificate, for a key that died with its HSM session. */
    async function diedAfterCertificate() {
      await fill(keyType, 1);
      const request = await newRequest(keyType);
      const now = Date.now();
      await requests.startAttempt(request.id, { attemptId: 'died', startedAt: now, leaseUntil: now + 1000 });
      const lost = await hsm.generateKeyPair(keyType, { extractable: false });
      const lostCsr = await buildCsr({
        subject: request.signer,
        keyType,
        publicKeySpki: lost.publicKeySpki,
        sign: (digest, options) => hsm.signDigest(lost.privateKey, digest, options),
      });
      const first = await replacing.issue({
        requestId: request.id,
        csrDer: lostCsr,
        attemptId: 'died',
        assertion: request.identityAssertion!,
        binding: bindingOf(request),
      });
      return { request, first, lost };
    }

    test('it signed nothing: the takeover signs with a replacement, the first certificate revoked superseded', async () => {
      const { request, first, lost } = await diedAfterCertificate();
      await hsm.destroy(lost.privateKey);
      const certificates = new CertificateRepository(doc, { tableName: stack.tables.certificates });
      const objectsBefore = await hsm.countSessionObjects();
      const later = { ...deps({ issuer: replacing }), clock: () => Date.now() + 60_000 };
      const outcome = await processSignRequest(later, request.id);
      expect(outcome).toMatchObject({ status: 'signed', replayed: false });
      expect(outcome.record.attemptId).not.toBe('died');
      expect(outcome.record.certificateSerial).not.toBe(first.serialHex);
      expect(verifiesWithOpenssl(request, outcome)).toBe(true);
      expect(await certificates.getByRequest(request.id)).toMatchObject({
        serialHex: outcome.record.certificateSerial,
        supersedes: first.serialHex,
      });
      const statuses = await certificates.statuses([first.serialHex, outcome.record.certificateSerial!]);
      expect(statuses.get(first.serialHex)?.revocation).toMatchObject({ reason: 'superseded' });
      expect(statuses.get(outcome.record.certificateSerial!)?.revocation).toBeUndefined();
      // In the one log: the first issuance, its revocation, the replacement, then the signature with it.
      const events = eventsOf(await auditStore.readAll()).filter(
        (e) => 'requestId' in e && e.requestId === request.id,
      );
      expect(
        events
          .filter((e) => e.type.startsWith('certificate.') || e.type === 'signature.made')
          .map((e) => [e.type, 'serial' in e ? e.serial : undefined]),
      ).toEqual([
        ['certificate.issued', first.serialHex],
        ['certificate.revoked', first.serialHex],
        ['certificate.issued', outcome.record.certificateSerial],
        ['signature.made', undefined],
      ]);
      expect(await hsm.countSessionObjects()).toBe(objectsBefore);
    });

    test('its signature is in the log (made and logged, the result not stored): the takeover ends ALREADY_CERTIFIED, nothing revoked', async () => {
      const { request, first, lost } = await diedAfterCertificate();
      const signature = await hsm.signDigest(lost.privateKey, Buffer.from(request.digest, 'base64'), {
        digestAlgorithm: request.digestAlgorithm,
        signatureAlgorithm: request.signatureAlgorithm,
      });
      await audit.append(
        signatureMadeEvent({ requestId: request.id, signature, publicKeySpki: lost.publicKeySpki }),
      );
      await hsm.destroy(lost.privateKey);
      const certificates = new CertificateRepository(doc, { tableName: stack.tables.certificates });
      const recorded = await certificates.getByRequest(request.id);
      const objectsBefore = await hsm.countSessionObjects();
      const later = { ...deps({ issuer: replacing }), clock: () => Date.now() + 60_000 };
      const outcome = await processSignRequest(later, request.id);
      expect(outcome).toMatchObject({ status: 'failed', replayed: false });
      expect(outcome.record.error?.code).toBe('ALREADY_CERTIFIED');
      expect(outcome.record.signature).toBeUndefined();
      // The request's one certificate is the dead attempt's, as it was, and not revoked; the taking-over
      // attempt's key signed nothing but its CSR and left no object in the HSM.
      expect(await certificates.getByRequest(request.id)).toEqual(recorded);
      const status = (await certificates.statuses([first.serialHex])).get(first.serialHex);
      expect(status).toMatchObject({ requestId: request.id });
      expect(status?.revocation).toBeUndefined();
      expect(await hsm.countSessionObjects()).toBe(objectsBefore);
    });
  });

  test('a crashed attempt is taken over once its lease expired, and not before', async () => {
    await fill(keyType, 1);
    const request = await newRequest(keyType);
    const now = Date.now();
    // A signer that entered `signing` and died: its lease runs until now + 60 s.
    await requests.startAttempt(request.id, {
      attemptId: 'crashed',
      startedAt: now,
      leaseUntil: now + 60_000,
    });
    await expect(processSignRequest(deps(), request.id)).rejects.toBeInstanceOf(RequestInProgressError);
    // Two minutes later the lease has expired: the next delivery takes over.
    const later = { ...deps(), clock: () => Date.now() + 120_000 };
    const outcome = await processSignRequest(later, request.id);
    expect(outcome).toMatchObject({ status: 'signed', replayed: false });
    expect(outcome.record.attempts).toBe(2);
    expect(outcome.record.attemptId).not.toBe('crashed');
    // The crashed attempt can no longer write its outcome.
    expect(
      await requests.fail(request.id, 'crashed', { error: { code: 'X', message: 'x' }, finishedAt: now }),
    ).toBeUndefined();
  });
});

describe('faults after the claim leave no HSM object and a terminal, explained request', () => {
  const keyType: KeyType = 'EC-P256';

  /** The real HSM, with one operation replaced by a failure. */
  function faultyHsm(op: 'signDigest' | 'unwrapPrivateKey' | 'generateKeyPair'): PoolHsm {
    return {
      generateKeyPair: (t, o) => hsm.generateKeyPair(t, o),
      wrapPrivateKey: (k, l) => hsm.wrapPrivateKey(k as never, l),
      unwrapPrivateKey: (w, t, l) => hsm.unwrapPrivateKey(w, t, l),
      signDigest: (k, d, o) => hsm.signDigest(k as never, d, o),
      destroy: (k) => hsm.destroy(k as never),
      [op]: async () => {
        throw new HsmError('sign failed with CKR_DEVICE_ERROR', 'sign', 0x30, 'CKR_DEVICE_ERROR');
      },
    };
  }

  async function expectFailedCleanly(
    signing: SigningDeps,
    expectedCode: string,
    pooled: boolean,
  ): Promise<void> {
    const objectsBefore = await hsm.countSessionObjects();
    const before = await available(keyType);
    const request = await newRequest(keyType);
    const outcome = await processSignRequest(signing, request.id);
    expect(outcome.status).toBe('failed');
    expect(outcome.record.status).toBe('failed');
    expect(outcome.record.error?.code).toBe(expectedCode);
    expect(outcome.record.error?.message).not.toContain('Tove');
    expect(outcome.record.pooledKey).toBe(pooled);
    expect(outcome.record.finishedAt).toBeDefined();
    expect(outcome.record.signature).toBeUndefined();
    expect(outcome.record.certificate).toBeUndefined();
    expect(await hsm.countSessionObjects()).toBe(objectsBefore);
    // The claimed key is consumed even though the request failed: it is never handed out again.
    if (pooled) expect(await available(keyType)).toBe(before - 1);
    const again = await processSignRequest(signing, request.id);
    expect(again).toMatchObject({ status: 'failed', replayed: true });
  }

  beforeAll(async () => {
    await fill(keyType, 8);
  });

  test('an HSM error while signing', async () => {
    await expectFailedCleanly(deps({ hsm: faultyHsm('signDigest') }), 'CKR_DEVICE_ERROR', true);
  });

  test('an HSM error while unwrapping', async () => {
    await expectFailedCleanly(deps({ hsm: faultyHsm('unwrapPrivateKey') }), 'CKR_DEVICE_ERROR', true);
  });

  test('a real HSM failure: the key object vanished before the signature (stale handle)', async () => {
    const vanishing: PoolHsm = {
      ...faultyHsm('generateKeyPair'),
      signDigest: async (k, d, o) => {
        await hsm.destroy(k as never);
        return hsm.signDigest(k as never, d, o);
      },
    };
    await expectFailedCleanly(deps({ hsm: vanishing }), 'CKR_OBJECT_HANDLE_INVALID', true);
  });

  test('an issuer error (after the key was used and destroyed)', async () => {
    const failing: CertificateIssuer = {
      issue: async () => {
        throw Object.assign(new Error('CA unavailable for serialNumber 197001019999'), { name: 'CaError' });
      },
    };
    await expectFailedCleanly(deps({ issuer: failing }), 'CERTIFICATE_ISSUE_FAILED', true);
  });

  test('transient HSM and CA failures are retried with backoff, and the request is signed', async () => {
    let signFailures = 1;
    let caFailures = 2;
    const flaky: PoolHsm = {
      ...faultyHsm('generateKeyPair'),
      generateKeyPair: (t, o) => hsm.generateKeyPair(t, o),
      signDigest: async (k, d, o) => {
        if (signFailures-- > 0) throw new HsmBusyError('busy', 'sign');
        return hsm.signDigest(k as never, d, o);
      },
    };
    const flakyIssuer: CertificateIssuer = {
      issue: async (input) => {
        if (caFailures-- > 0) throw new PipelineError('down', 'CA_UNAVAILABLE', { transient: true });
        return issuer.issue(input);
      },
    };
    const retries: string[] = [];
    const signing = {
      ...deps({ hsm: flaky, issuer: flakyIssuer }),
      onRetry: (stage: string) => retries.push(stage),
    };
    const request = await newRequest(keyType);
    const outcome = await processSignRequest(signing, request.id);
    expect(outcome.status).toBe('signed');
    expect(verifiesWithOpenssl(request, outcome)).toBe(true);
    // The key's first signature is the CSR's (proof of possession), before the digest's.
    expect(retries).toEqual(['csr', 'issue', 'issue']);
  });

  test('a CA that stays unavailable ends the request after the bounded retries', async () => {
    let calls = 0;
    const down: CertificateIssuer = {
      issue: async () => {
        calls++;
        throw new PipelineError('down', 'CA_UNAVAILABLE', { transient: true });
      },
    };
    await expectFailedCleanly(deps({ issuer: down }), 'CA_UNAVAILABLE', true);
    expect(calls).toBe(3);
  });

  test('an audit log that cannot be written fails the request: no signature is released unaudited', async () => {
    const broken: AuditSink = {
      append: () => Promise.reject(new Error('audit table unavailable')),
      appendMany: () => Promise.reject(new Error('audit table unavailable')),
    };
    await expectFailedCleanly(deps({ audit: broken }), 'AUDIT_WRITE_FAILED', true);
  });

  test('an issuer error on the on-the-fly path', async () => {
    // Drain the pool first so the fallback path runs.
    while (await pool.claim(keyType, Math.floor(Date.now() / 1000)));
    const failing: CertificateIssuer = {
      issue: async () => {
        throw Object.assign(new Error('no'), { code: 'CA_NOT_READY' });
      },
    };
    await expectFailedCleanly(deps({ issuer: failing }), 'CA_NOT_READY', false);
  });
});
