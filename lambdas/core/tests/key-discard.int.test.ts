/**
 * Unusable pool keys are discarded and the request carries on with another key: a wrapped blob with a
 * flipped byte (unwrap rejected) and an item whose stored public key belongs to another key pair
 * (caught by the proof-of-possession check before the CA). No certificate is ever issued for a key the
 * signer did not hold, and nothing is left in the HSM. SoftHSM, DynamoDB Local and the real CA.
 */
import { X509Certificate, randomUUID } from 'node:crypto';
import type { KeyPoolRepository, RequestRepository } from '@pipeline/adapters/dynamodb';
import type { AuditRepository } from '../../adapters/dynamodb/src/audit-repository';
import type { Pkcs11Hsm } from '@pipeline/adapters/hsm';
import type { CertificateAuthority } from '@pipeline/ca';
import { loadConfig } from '@pipeline/config';
import { buildCsr, verifyOwnCsr } from '@pipeline/der';
import { sampleSignRequestRecord } from '../../../scripts/local/sample-sign-request';
import { createTestSigningStack, type TestSigningStack } from '../../../scripts/local/signing-stack';
import { AuditLog } from '@pipeline/audit';
import { InMemoryPoolMetrics, type PoolKey } from '../src/pool';
import { eventsOf, keyUsage } from '../src/audit';
import { processSignRequest, type SigningDeps } from '../src/signing';

const config = loadConfig(process.env);
const WRAP = config.hsm.wrapKeyLabel;
let hsm: Pkcs11Hsm;
let pool: KeyPoolRepository;
let requests: RequestRepository;
let issuer: CertificateAuthority;
let auditStore: AuditRepository;

let stack: TestSigningStack;

beforeAll(async () => {
  stack = await createTestSigningStack({ poolShards: 1 });
  ({ hsm, pool, requests, issuer, auditStore } = stack);
});

afterAll(async () => {
  await stack?.close();
});

async function poolKey(): Promise<PoolKey & { spki: Buffer }> {
  const pair = await hsm.generateKeyPair('EC-P256', { extractable: true });
  const wrappedKey = await hsm.wrapPrivateKey(pair.privateKey, WRAP);
  await hsm.destroy(pair.privateKey);
  return {
    keyId: randomUUID(),
    keyType: 'EC-P256',
    wrappedKey,
    publicKeySpki: pair.publicKeySpki,
    spki: pair.publicKeySpki,
    wrapKeyLabel: WRAP,
    hsmProfile: config.hsm.profile,
    createdAt: Date.now(),
    expiresAt: Math.floor(Date.now() / 1000) + 3600,
  };
}

/** The signing core over the real stack; discards reported to `onDiscarded`. */
function signingDeps(options: {
  policy: 'fallback' | 'reject';
  onDiscarded: (keyId: string, reason: string) => void;
  metrics?: InMemoryPoolMetrics;
  audit?: AuditLog;
  maxDiscardedKeys?: number;
}): SigningDeps {
  return {
    requests,
    pool,
    hsm,
    buildCsr,
    verifyCsr: verifyOwnCsr,
    issuer,
    metrics: options.metrics ?? new InMemoryPoolMetrics(),
    onKeyDiscarded: (keyId, _type, reason) => options.onDiscarded(keyId, reason),
    audit: options.audit,
    settings: {
      emptyPoolPolicy: options.policy,
      retryAfterSeconds: 30,
      leaseMs: 30_000,
      hsmProfile: config.hsm.profile,
      maxDiscardedKeys: options.maxDiscardedKeys,
    },
  };
}

async function request(): Promise<string> {
  const record = sampleSignRequestRecord();
  await requests.create(record);
  return record.id;
}

test('a corrupted blob and a swapped public key are discarded; the request is signed with the good key', async () => {
  const [good, corrupted, swappedA, other] = await Promise.all([poolKey(), poolKey(), poolKey(), poolKey()]);
  corrupted.wrappedKey[Math.floor(corrupted.wrappedKey.length / 2)] ^= 0x01;
  // The item carries key A's wrapped private key but key B's public key: a write an attacker could make.
  const swapped = { ...swappedA, publicKeySpki: other.spki };
  expect((await pool.add([good, corrupted, swapped])).written).toBe(3);

  const discarded: string[] = [];
  const metrics = new InMemoryPoolMetrics();
  const audit = new AuditLog(auditStore, { chains: 2 });
  const deps = (policy: 'fallback' | 'reject'): SigningDeps =>
    signingDeps({
      policy,
      metrics,
      audit,
      onDiscarded: (keyId, reason) => discarded.push(`${keyId}:${reason}`),
    });
  const before = await hsm.countSessionObjects();

  const first = await processSignRequest(deps('fallback'), await request());
  expect(first.status).toBe('signed');
  expect(first.record.pooledKey).toBe(true);
  // Whatever the claim order, the certificate is for the one key whose stored public key is its own.
  const leaf = new X509Certificate(first.record.certificate!);
  expect(leaf.publicKey.export({ type: 'spki', format: 'der' }).equals(good.spki)).toBe(true);

  // The second request meets whatever bad keys are left, discards them, then finds the pool empty.
  const second = await processSignRequest(deps('reject'), await request());
  expect(second.status).toBe('failed');
  expect(second.record.error?.code).toBe('POOL_EMPTY');

  expect(discarded.sort()).toEqual(
    [`${corrupted.keyId}:unwrap-failed`, `${swapped.keyId}:public-key-mismatch`].sort(),
  );
  expect(metrics.snapshot().counters.KeysDiscarded?.['EC-P256']).toBe(2);
  expect(await pool.available(['EC-P256'])).toEqual(expect.objectContaining({ 'EC-P256': 0 }));
  expect(await hsm.countSessionObjects()).toBe(before);

  // The audit log records both discards with their reasons, against the requests that met them, and
  // ties the one signature to the good key.
  const events = eventsOf(await auditStore.readAll());
  expect(
    events
      .filter((e) => e.type === 'pool.key-discarded')
      .map((e) => (e.type === 'pool.key-discarded' ? `${e.keyId}:${e.reason}` : ''))
      .sort(),
  ).toEqual(discarded.sort());
  const signatures = events.filter((e) => e.type === 'signature.made');
  expect(signatures).toEqual([expect.objectContaining({ requestId: first.record.id, keyId: good.keyId })]);
  expect(keyUsage(events)).toMatchObject({ claimed: 3, reused: [] });
  expect(first.record.discardedKeys! + (second.record.discardedKeys ?? 0)).toBe(2);
});

test('a request that meets more unusable keys than it may discard fails KEY_UNWRAP_FAILED, naming the key', async () => {
  const keys = await Promise.all([poolKey(), poolKey()]);
  for (const key of keys) key.wrappedKey[Math.floor(key.wrappedKey.length / 2)] ^= 0x01;
  expect((await pool.add(keys)).written).toBe(2);
  const discarded: string[] = [];
  const outcome = await processSignRequest(
    signingDeps({ policy: 'reject', maxDiscardedKeys: 1, onDiscarded: (keyId) => discarded.push(keyId) }),
    await request(),
  );
  expect(outcome.status).toBe('failed');
  expect(outcome.record.error?.code).toBe('KEY_UNWRAP_FAILED');
  expect(discarded).toHaveLength(1);
  const last = keys.find((k) => k.keyId !== discarded[0])!;
  expect(outcome.record.error?.message).toContain(last.keyId);
  expect(outcome.record.discardedKeys).toBe(1);
});
