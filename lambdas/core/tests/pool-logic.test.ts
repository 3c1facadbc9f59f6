/**
 * Unit tests of the pure pool and request-state rules (no HSM, no DynamoDB).
 */
import fc from 'fast-check';
import { InMemoryPoolMetrics, isKeyUsable, keyExpiresAt, shardVisitOrder, shuffle } from '../src/pool';
import {
  decideDelivery,
  isTerminal,
  requestErrorFor,
  requestExpiresAt,
  type StoredSignRequest,
} from '../src/signing';
import { errorCode } from '../src/shared';
import { loadPoolConfig, loadRequestsConfig } from '@pipeline/config';

const base: StoredSignRequest = {
  id: '00000000-0000-4000-8000-000000000001',
  clientId: 'client',
  status: 'received',
  digest: Buffer.alloc(32).toString('base64'),
  digestAlgorithm: 'SHA-256',
  keyType: 'EC-P256',
  signatureAlgorithm: 'ECDSA',
  signer: { commonName: 'A B', givenName: 'A', surname: 'B', serialNumber: '197001010000', country: 'SE' },
  receivedAt: 1_000,
  expiresAt: 10,
};

describe('request state machine', () => {
  test('signed and failed are terminal', () => {
    expect(isTerminal('received')).toBe(false);
    expect(isTerminal('signed')).toBe(true);
    expect(isTerminal('failed')).toBe(true);
    expect(isTerminal('signing')).toBe(false);
  });

  test('a delivery replays terminal records, starts received ones, and respects a live lease', () => {
    expect(decideDelivery({ ...base, status: 'signed' }, 5_000)).toEqual({ kind: 'replay' });
    expect(decideDelivery({ ...base, status: 'failed' }, 5_000)).toEqual({ kind: 'replay' });
    expect(decideDelivery(base, 5_000)).toEqual({ kind: 'start' });
    expect(decideDelivery({ ...base, status: 'signing', attemptId: 'a', leaseUntil: 6_000 }, 5_000)).toEqual({
      kind: 'busy',
      retryAfterMs: 1_000,
    });
  });

  test('an expired lease (a crashed attempt) is taken over, naming the stale attempt', () => {
    expect(decideDelivery({ ...base, status: 'signing', attemptId: 'a', leaseUntil: 5_000 }, 5_000)).toEqual({
      kind: 'takeover',
      staleAttemptId: 'a',
    });
    // No lease at all (written by something that predates leases): recoverable too.
    expect(decideDelivery({ ...base, status: 'signing' }, 5_000)).toEqual({
      kind: 'takeover',
      staleAttemptId: undefined,
    });
  });

  test('a record expires its retention after the second it was received', () => {
    expect(requestExpiresAt(1_999, 60)).toBe(61);
  });
});

describe('pool rules', () => {
  test('a key is usable strictly before its expiry second', () => {
    const expiresAt = keyExpiresAt(10_500, 30);
    expect(expiresAt).toBe(40);
    expect(isKeyUsable({ expiresAt }, 39)).toBe(true);
    expect(isKeyUsable({ expiresAt }, 40)).toBe(false);
  });

  test('a claimer visits every shard exactly once, from any start', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (n, r) => {
          const order = shardVisitOrder(n, () => r);
          expect([...order].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
        },
      ),
    );
  });

  test('different random starts spread claimers over shards', () => {
    const starts = new Set(Array.from({ length: 200 }, () => shardVisitOrder(8)[0]));
    expect(starts.size).toBe(8);
  });

  test('shuffle keeps the same elements', () => {
    fc.assert(
      fc.property(fc.array(fc.integer()), (items) => {
        expect(shuffle([...items]).sort()).toEqual([...items].sort());
      }),
    );
  });
});

describe('stored errors', () => {
  test('use the cause code when it is machine-readable, else the stage code', () => {
    const hsm = Object.assign(new Error('C_Sign failed'), { name: 'HsmError', code: 'CKR_DEVICE_ERROR' });
    expect(requestErrorFor('sign', hsm)).toEqual({
      code: 'CKR_DEVICE_ERROR',
      message: 'sign failed: HsmError (CKR_DEVICE_ERROR)',
    });
    expect(requestErrorFor('issue', new TypeError('boom'))).toEqual({
      code: 'CERTIFICATE_ISSUE_FAILED',
      message: 'issue failed: TypeError (TypeError)',
    });
    // A registry code (a CA refusal) is the client's to read.
    const refusal = Object.assign(new Error('refused'), { code: 'ALREADY_CERTIFIED' });
    expect(requestErrorFor('issue', refusal).code).toBe('ALREADY_CERTIFIED');
  });

  test('an internal code outside the registry stays in the message, behind the stage code', () => {
    for (const [stage, code, expected] of [
      ['issue', 'SERIAL_COLLISION', 'CERTIFICATE_ISSUE_FAILED'],
      ['audit', 'BATCH_GET_INCOMPLETE', 'AUDIT_WRITE_FAILED'],
      ['validation', 'CRL_INVALID', 'VALIDATION_DATA_UNAVAILABLE'],
    ] as const) {
      const cause = Object.assign(new Error('internal'), { name: 'InternalError', code });
      expect(requestErrorFor(stage, cause)).toEqual({
        code: expected,
        message: `${stage} failed: InternalError (${code})`,
      });
    }
  });

  test('never copy the cause message (it may carry personal data)', () => {
    const cause = Object.assign(new Error('serialNumber 197001010000 rejected'), {
      code: 'bad code with 1970',
    });
    const stored = requestErrorFor('issue', cause);
    expect(JSON.stringify(stored)).not.toContain('1970');
    expect(stored.code).toBe('CERTIFICATE_ISSUE_FAILED');
    expect(errorCode('not an error')).toBe('UNKNOWN_ERROR');
  });
});

describe('metrics', () => {
  test('the in-memory snapshot sums counters and keeps the last gauge, per key type', () => {
    const metrics = new InMemoryPoolMetrics();
    metrics.count('KeysClaimed', 'RSA-2048');
    metrics.count('KeysClaimed', 'RSA-2048', 2);
    metrics.count('OnTheFlyFallbacks', 'EC-P256');
    metrics.gauge('KeysAvailable', 'RSA-2048', 10);
    metrics.gauge('KeysAvailable', 'RSA-2048', 7);
    expect(metrics.snapshot()).toEqual({
      counters: { KeysClaimed: { 'RSA-2048': 3 }, OnTheFlyFallbacks: { 'EC-P256': 1 } },
      gauges: { KeysAvailable: { 'RSA-2048': 7 } },
    });
    expect(metrics.counter('KeysClaimed', 'RSA-2048')).toBe(3);
  });
});

describe('pool configuration', () => {
  test('defaults: 8 shards, bundles of 10, 30-day keys, fallback (2 generations per type, 2 s wait), admission (20 on the fly, reserve 10), 60 s lease, 30-day retention, 20-minute reconcile', () => {
    expect(loadPoolConfig({})).toEqual({
      shards: 8,
      bundleSize: 10,
      keyMaxAgeSeconds: 30 * 86_400,
      emptyPolicy: 'fallback',
      retryAfterSeconds: 30,
      fallbackMaxInFlight: 2,
      fallbackWaitMs: 2000,
      admissionOnTheFly: 20,
      clientReserve: 10,
      fillParallelism: 2,
    });
    expect(loadRequestsConfig({})).toEqual({
      retentionSeconds: 30 * 86_400,
      attemptLeaseSeconds: 60,
      reconcileStaleAfterSeconds: 1200,
      reconcileMaxRequeues: 2,
      reconcileBatchLimit: 1000,
    });
  });

  test('malformed values are named errors that name the variable', () => {
    expect(() => loadPoolConfig({ POOL_EMPTY_POLICY: 'maybe' })).toThrow(/POOL_EMPTY_POLICY/);
    expect(() => loadPoolConfig({ POOL_SHARDS: '0' })).toThrow(/POOL_SHARDS/);
    expect(() => loadPoolConfig({ POOL_FALLBACK_MAX_IN_FLIGHT: '0' })).toThrow(/POOL_FALLBACK_MAX_IN_FLIGHT/);
    expect(() => loadPoolConfig({ POOL_FALLBACK_WAIT_MS: '-1' })).toThrow(/POOL_FALLBACK_WAIT_MS/);
    expect(() => loadRequestsConfig({ RECONCILE_STALE_AFTER_SECONDS: '0' })).toThrow(
      /RECONCILE_STALE_AFTER_SECONDS/,
    );
    expect(() => loadRequestsConfig({ RECONCILE_MAX_REQUEUES: 'two' })).toThrow(/RECONCILE_MAX_REQUEUES/);
    expect(loadPoolConfig({ POOL_EMPTY_POLICY: 'reject', POOL_SHARDS: '4' })).toMatchObject({
      emptyPolicy: 'reject',
      shards: 4,
    });
  });
});
