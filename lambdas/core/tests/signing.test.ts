/**
 * The signing core with in-memory fakes of its ports: deliveries (fresh, replay, busy, takeover, lost
 * races, superseded attempts), every failure stage and its code, unusable pool keys, the empty-pool
 * policies, retries, and that no HSM object outlives an attempt, whatever ended it.
 */
import { createHash } from 'node:crypto';
import {
  AttemptSupersededError,
  KeyUnavailableError,
  RequestInProgressError,
  RequestNotFoundError,
  processSignRequest,
  type SigningStage,
  type StoredSignRequest,
} from '../src/signing';
import { FallbackLimiter } from '../src/pool';
import { sampleSignRequestRecord } from '../../../scripts/local/sample-sign-request';
import { FakeTime, gate, harness, hsmError, poolKey, settle, type Harness } from './fakes';

function received(h: Harness, overrides: Partial<StoredSignRequest> = {}): StoredSignRequest {
  const record = sampleSignRequestRecord(overrides) as StoredSignRequest;
  h.store.put(record);
  return record;
}

describe('deliveries', () => {
  test('a fresh request is signed with a pool key: result stored, receipt kept, key destroyed, events appended', async () => {
    const h = harness();
    h.pool.push(poolKey(1));
    const record = received(h);
    const outcome = await processSignRequest(h.deps, record.id);
    expect(outcome).toMatchObject({ status: 'signed', replayed: false });
    const stored = h.store.records.get(record.id)!;
    expect(stored).toMatchObject({
      status: 'signed',
      attemptId: 'attempt-1',
      pooledKey: true,
      discardedKeys: 0,
      certificate: `cert-for-${record.id}`,
      certificateSerial: '0a',
      receipt: { leafIndex: 1 },
    });
    expect(Buffer.from(stored.signature!, 'base64').toString()).toMatch(/^sig\(key-1\):/);
    expect(h.hsm.live.size).toBe(0);
    expect(h.appended.map((e) => e.type)).toEqual([
      'pool.key-claimed',
      'signature.made',
      'pool.key-destroyed',
    ]);
    expect(h.metrics.counter('KeysClaimed', 'EC-P256')).toBe(1);
  });

  test('cms: the certificate is issued before the one-time key signs the attributes naming it', async () => {
    const h = harness();
    h.pool.push(poolKey(1));
    const record = received(h, { format: 'cms', profile: 'CAdES-B-B' });
    const outcome = await processSignRequest(h.deps, record.id);
    expect(outcome.status).toBe('signed');
    // CSR signature, certificate, signature over the attributes, then the audit events.
    expect(h.order).toEqual(['sign', 'issue', 'sign', 'audit']);
    expect(Buffer.from(h.store.records.get(record.id)!.cms!, 'base64').toString()).toMatch(
      /^cms:sig\(key-1\):/,
    );
    expect(h.hsm.live.size).toBe(0);
  });

  test('raw: the certificate is issued before the one-time key signs the digest; the CA gets the assertion and what will be signed', async () => {
    const h = harness();
    const asked: unknown[] = [];
    const issue = h.deps.issuer.issue.bind(h.deps.issuer);
    h.deps.issuer = { issue: (input) => (asked.push(input), issue(input)) };
    h.pool.push(poolKey(1));
    const record = received(h);
    expect((await processSignRequest(h.deps, record.id)).status).toBe('signed');
    expect(h.order).toEqual(['sign', 'issue', 'sign', 'audit']);
    expect(asked).toEqual([
      expect.objectContaining({
        requestId: record.id,
        assertion: record.identityAssertion,
        binding: {
          requestId: record.id,
          digestAlgorithm: record.digestAlgorithm,
          digest: record.digest,
          keyType: record.keyType,
          signatureAlgorithm: record.signatureAlgorithm,
          format: 'raw',
        },
      }),
    ]);
  });

  test('the certificate is asked for the attempt that signs, and nothing more before the signature; a refusal signs nothing', async () => {
    const h = harness();
    const issue = h.deps.issuer.issue.bind(h.deps.issuer);
    const attempts: unknown[] = [];
    h.deps.issuer = { issue: (input) => (attempts.push(input.attemptId), issue(input)) };
    h.pool.push(poolKey(1), poolKey(2));
    const record = received(h, { format: 'cms', profile: 'CAdES-B-B' });
    expect((await processSignRequest(h.deps, record.id)).status).toBe('signed');
    // The CA released the certificate to this attempt as it issued it: one call, then the signature.
    expect(h.order).toEqual(['sign', 'issue', 'sign', 'audit']);
    expect(attempts).toEqual([h.store.records.get(record.id)!.attemptId]);

    // The request's certificate was released to another attempt (this one took the request over): the
    // key signs nothing but its CSR.
    h.order.length = 0;
    h.deps.issuer = {
      issue: async () => {
        h.order.push('issue');
        throw Object.assign(new Error('released to another attempt'), { code: 'ALREADY_CERTIFIED' });
      },
    };
    const other = received(h);
    const outcome = await processSignRequest(h.deps, other.id);
    expect(outcome.record.error?.code).toBe('ALREADY_CERTIFIED');
    expect(outcome.record.signature).toBeUndefined();
    expect(h.order.filter((o) => o === 'sign')).toEqual(['sign']);
    expect(h.appended.filter((e) => e.type === 'signature.made' && e.requestId === other.id)).toEqual([]);
    expect(h.hsm.live.size).toBe(0);
  });

  test('a record without an identity assertion fails before any key is used, and the refusal is audited', async () => {
    const h = harness();
    h.pool.push(poolKey(1));
    const record = received(h, { identityAssertion: undefined });
    const outcome = await processSignRequest(h.deps, record.id);
    expect(outcome.record.error?.code).toBe('IDENTITY_EVIDENCE_MISSING');
    expect(h.hsm.calls).toEqual([]);
    expect(h.pool).toHaveLength(1);
    expect(h.issued).toEqual([]);
    expect(h.appended).toEqual([
      { type: 'request.refused', requestId: record.id, code: 'IDENTITY_EVIDENCE_MISSING' },
    ]);
  });

  test('cms without a container builder fails CONTAINER_UNSUPPORTED and leaves no key', async () => {
    const h = harness({ buildContainer: undefined });
    h.pool.push(poolKey(1));
    const record = received(h, { format: 'cms', profile: 'CAdES-B-B' });
    const outcome = await processSignRequest(h.deps, record.id);
    expect(outcome.record.error?.code).toBe('CONTAINER_UNSUPPORTED');
    expect(h.hsm.live.size).toBe(0);
  });

  test('a terminal request is replayed without touching the pool or the HSM', async () => {
    const h = harness();
    const record = received(h, { status: 'signed' });
    expect(await processSignRequest(h.deps, record.id)).toMatchObject({ status: 'signed', replayed: true });
    expect(h.hsm.calls).toEqual([]);
  });

  test('unknown id: RequestNotFoundError', async () => {
    await expect(processSignRequest(harness().deps, 'no-such-id')).rejects.toBeInstanceOf(
      RequestNotFoundError,
    );
  });

  test('a live attempt owns the request: busy, with the time left on its lease', async () => {
    const h = harness();
    const record = received(h, {
      status: 'signing',
      attemptId: 'other',
      leaseUntil: 1_000_000 + 30_000,
    } as Partial<StoredSignRequest>);
    const error = await processSignRequest(h.deps, record.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestInProgressError);
    expect((error as RequestInProgressError).retryAfterMs).toBeGreaterThan(29_000);
    expect(h.hsm.calls).toEqual([]);
  });

  test('an expired lease is taken over by a new attempt, which signs', async () => {
    const h = harness();
    h.pool.push(poolKey(1));
    const record = received(h, {
      status: 'signing',
      attemptId: 'crashed',
      leaseUntil: 10,
      attempts: 1,
    } as Partial<StoredSignRequest>);
    const outcome = await processSignRequest(h.deps, record.id);
    expect(outcome.status).toBe('signed');
    expect(h.store.records.get(record.id)).toMatchObject({ attemptId: 'attempt-2', attempts: 2 });
  });

  test('a lost race to start: another delivery started it first, so this one is busy', async () => {
    const h = harness();
    const record = received(h);
    h.store.beforeStart = (id) => {
      h.store.beforeStart = undefined;
      h.store.put({
        ...h.store.records.get(id)!,
        status: 'signing',
        attemptId: 'winner',
        leaseUntil: 5_000_000,
      });
    };
    await expect(processSignRequest(h.deps, record.id)).rejects.toBeInstanceOf(RequestInProgressError);
    expect(h.hsm.calls).toEqual([]);
  });

  test('a lost race that the winner already finished is replayed', async () => {
    const h = harness();
    const record = received(h);
    h.store.beforeStart = (id) => {
      h.store.beforeStart = undefined;
      h.store.put({ ...h.store.records.get(id)!, status: 'signed', attemptId: 'winner' });
    };
    expect(await processSignRequest(h.deps, record.id)).toMatchObject({ status: 'signed', replayed: true });
  });

  test('an attempt superseded while it worked cannot store its result, and leaves no key', async () => {
    const h = harness();
    h.pool.push(poolKey(1));
    const record = received(h);
    h.deps.issuer.issue = async () => {
      // Another delivery took the request over meanwhile.
      h.store.put({ ...h.store.records.get(record.id)!, attemptId: 'usurper' });
      return { certificatePem: 'c', chainPem: [], serialHex: '0b' };
    };
    await expect(processSignRequest(h.deps, record.id)).rejects.toBeInstanceOf(AttemptSupersededError);
    expect(h.store.records.get(record.id)).toMatchObject({ status: 'signing', attemptId: 'usurper' });
    expect(h.hsm.live.size).toBe(0);
  });
});

/** An error without a code of its own: the stage's code is stored (a CKR code would be kept instead). */
function codeless(name: string): Error {
  return Object.assign(new Error(name), { name });
}

/** The CSR's signature (the first) goes through; the signature over the digest fails. */
function failSecondSignature(h: Harness): void {
  let calls = 0;
  const sign = h.hsm.signDigest.bind(h.hsm);
  h.hsm.signDigest = async (key, digest, options) => {
    if (++calls === 2) throw codeless('HsmError');
    return sign(key, digest, options);
  };
}

describe('failure stages: each ends the request with its code and leaves no HSM object', () => {
  const cases: Array<[SigningStage, string, (h: Harness) => void]> = [
    [
      'claim',
      'POOL_CLAIM_FAILED',
      (h) => void (h.deps.pool.claim = async () => Promise.reject(new Error('table down'))),
    ],
    ['unwrap', 'KEY_UNWRAP_FAILED', (h) => void (h.hsm.failures.unwrapPrivateKey = [codeless('HsmError')])],
    [
      'keygen',
      'KEYGEN_FAILED',
      (h) => void ((h.pool.length = 0), (h.hsm.failures.generateKeyPair = [codeless('HsmError')])),
    ],
    ['sign', 'HSM_SIGN_FAILED', (h) => failSecondSignature(h)],
    [
      'csr',
      'CSR_FAILED',
      (h) => void (h.deps.buildCsr = async () => Promise.reject(new Error('bad subject'))),
    ],
    [
      'issue',
      'CERTIFICATE_ISSUE_FAILED',
      (h) => void (h.deps.issuer.issue = async () => Promise.reject(new Error('refused'))),
    ],
    [
      'audit',
      'AUDIT_WRITE_FAILED',
      (h) => void (h.deps.audit!.appendMany = async () => Promise.reject(new Error('log down'))),
    ],
  ];

  test.each(cases)('%s -> %s', async (stage, code, breakIt) => {
    const h = harness();
    h.pool.push(poolKey(1));
    breakIt(h);
    const record = received(h);
    const outcome = await processSignRequest(h.deps, record.id);
    expect(outcome.status).toBe('failed');
    expect(outcome.record.error).toMatchObject({ code });
    expect(outcome.record.error!.message).toMatch(new RegExp(`^${stage} failed: `));
    expect(h.hsm.live.size).toBe(0);
  });

  test('container -> CONTAINER_FAILED (after the certificate, before the signature)', async () => {
    const h = harness({
      buildContainer: () => {
        throw new Error('bad attributes');
      },
    });
    h.pool.push(poolKey(1));
    const record = received(h, { format: 'cms', profile: 'CAdES-B-B' });
    const outcome = await processSignRequest(h.deps, record.id);
    expect(outcome.record.error?.code).toBe('CONTAINER_FAILED');
    expect(h.hsm.live.size).toBe(0);
  });

  test('destroy -> KEY_DESTROY_FAILED, and the safety net tries the destroy again', async () => {
    const h = harness({ retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } });
    h.pool.push(poolKey(1));
    h.hsm.failures.destroy = [codeless('HsmError')];
    const record = received(h);
    const outcome = await processSignRequest(h.deps, record.id);
    expect(outcome.record.error?.code).toBe('KEY_DESTROY_FAILED');
    expect(h.hsm.calls.filter((c) => c === 'destroy')).toHaveLength(2);
    expect(h.hsm.live.size).toBe(0);
  });

  test('a cause with a code of its own keeps it', async () => {
    const h = harness();
    h.pool.push(poolKey(1));
    h.deps.issuer.issue = async () => Promise.reject(Object.assign(new Error('no'), { code: 'BAD_CSR' }));
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome.record.error?.code).toBe('BAD_CSR');
  });

  test('a transient HSM failure is retried and the request signed', async () => {
    const retried: SigningStage[] = [];
    const h = harness({ onRetry: (stage) => retried.push(stage) });
    h.pool.push(poolKey(1));
    h.hsm.failures.unwrapPrivateKey = [hsmError('HsmBusyError', 'CKR_SESSION_COUNT')];
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome.status).toBe('signed');
    expect(retried).toEqual(['unwrap']);
    expect(h.hsm.live.size).toBe(0);
  });
});

describe('unusable pool keys are discarded and the request carries on', () => {
  test('profile mismatch, unwrap rejection and a stored public key that is not the key: three discards, then signed', async () => {
    const discarded: string[] = [];
    const h = harness({ onKeyDiscarded: (keyId, _t, reason) => discarded.push(`${keyId}:${reason}`) });
    h.pool.push(
      poolKey(1, { hsmProfile: 'cloudhsm' }),
      poolKey(2),
      poolKey(3, { publicKeySpki: Buffer.from('spki-of-key-99') }),
      poolKey(4),
    );
    h.hsm.failures.unwrapPrivateKey = [hsmError('HsmUnwrapError', 'CKR_WRAPPED_KEY_INVALID')];
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome.status).toBe('signed');
    expect(discarded).toEqual(['k1:profile-mismatch', 'k2:unwrap-failed', 'k3:public-key-mismatch']);
    expect(outcome.record).toMatchObject({ discardedKeys: 3 });
    expect(Buffer.from(outcome.record.signature!, 'base64').toString()).toMatch(/^sig\(key-4\):/);
    expect(h.appended.filter((e) => e.type === 'pool.key-discarded')).toHaveLength(3);
    expect(h.hsm.live.size).toBe(0);
  });

  test.each([
    ['profile', { hsmProfile: 'cloudhsm' }, 'KEY_PROFILE_MISMATCH'],
    ['public key', { publicKeySpki: Buffer.from('spki-of-key-99') }, 'KEY_PUBLIC_MISMATCH'],
  ] as const)('past the limit (%s): the request fails %s', async (_what, broken, code) => {
    const h = harness({ settings: { maxDiscardedKeys: 1 } });
    h.pool.push(poolKey(1, broken), poolKey(2, broken));
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome.record.error?.code).toBe(code);
    expect(h.hsm.live.size).toBe(0);
  });

  test('past the limit (unwrap): KEY_UNWRAP_FAILED', async () => {
    const h = harness({ settings: { maxDiscardedKeys: 0 } });
    h.pool.push(poolKey(1));
    h.hsm.failures.unwrapPrivateKey = [hsmError('HsmUnwrapError', 'CKR_WRAPPED_KEY_INVALID')];
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome.record.error?.code).toBe('KEY_UNWRAP_FAILED');
  });
});

describe('a pool key the CA certified before (a restored copy) is discarded; nothing is signed with it', () => {
  const alreadyCertified = (h: Harness, certified: Set<string>) => {
    const issue = h.deps.issuer.issue.bind(h.deps.issuer);
    h.deps.issuer = {
      issue: async (input) => {
        const { spki } = JSON.parse(input.csrDer.toString()) as { spki: string };
        if (certified.has(spki)) {
          throw Object.assign(new Error('certified before'), { code: 'PUBLIC_KEY_ALREADY_CERTIFIED' });
        }
        return issue(input);
      },
    };
  };

  test('the next key serves: signed, the copies discarded and audited, counted apart from other discards', async () => {
    const h = harness({ settings: { maxDiscardedKeys: 0 } });
    alreadyCertified(h, new Set(['spki-of-key-1', 'spki-of-key-2']));
    h.pool.push(poolKey(1), poolKey(2), poolKey(3));
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome.status).toBe('signed');
    expect(Buffer.from(outcome.record.signature!, 'base64').toString()).toMatch(/^sig\(key-3\):/);
    expect(outcome.record.discardedKeys).toBe(2);
    expect(
      h.appended.filter((e) => e.type === 'pool.key-discarded').map((e) => 'reason' in e && e.reason),
    ).toEqual(['already-certified', 'already-certified']);
    // The copies signed nothing but their CSRs: one signature.made, for the key that served.
    expect(h.appended.filter((e) => e.type === 'signature.made')).toHaveLength(1);
    expect(h.hsm.live.size).toBe(0);
  });

  test('past its own limit the request fails PUBLIC_KEY_ALREADY_CERTIFIED', async () => {
    const h = harness({ settings: { maxReplayedKeys: 1 } });
    alreadyCertified(h, new Set(['spki-of-key-1', 'spki-of-key-2']));
    h.pool.push(poolKey(1), poolKey(2), poolKey(3));
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome.record.error?.code).toBe('PUBLIC_KEY_ALREADY_CERTIFIED');
    expect(outcome.record.signature).toBeUndefined();
    expect(h.hsm.live.size).toBe(0);
  });
});

describe('a pool key stored in another encoding than its canonical one (a re-encoded copy) is discarded unused', () => {
  test('before the HSM unwraps it: the next key serves, the discard names the key by its canonical hash', async () => {
    const h = harness({ settings: { maxDiscardedKeys: 0 } });
    const issued: string[] = [];
    const issue = h.deps.issuer.issue.bind(h.deps.issuer);
    h.deps.issuer = {
      issue: async (input) => {
        issued.push((JSON.parse(input.csrDer.toString()) as { spki: string }).spki);
        return issue(input);
      },
    };
    h.pool.push(poolKey(1, { publicKeySpki: Buffer.from('reencoded:spki-of-key-1') }), poolKey(2));
    const unwraps = jest.spyOn(h.hsm, 'unwrapPrivateKey');
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome.status).toBe('signed');
    expect(Buffer.from(outcome.record.signature!, 'base64').toString()).toMatch(/^sig\(key-2\):/);
    expect(unwraps).toHaveBeenCalledTimes(1);
    expect(issued).toEqual(['spki-of-key-2']);
    expect(outcome.record.discardedKeys).toBe(1);
    expect(h.appended.filter((e) => e.type === 'pool.key-discarded')).toEqual([
      {
        type: 'pool.key-discarded',
        keyId: 'k1',
        reason: 'public-key-not-canonical',
        requestId: outcome.record.id,
        keySpkiHash: createHash('sha256').update('spki-of-key-1').digest('hex'),
      },
    ]);
    expect(h.hsm.live.size).toBe(0);
  });

  test('past the copies a request may discard: PUBLIC_KEY_NOT_CANONICAL, nothing signed', async () => {
    const h = harness({ settings: { maxReplayedKeys: 1 } });
    h.pool.push(
      poolKey(1, { publicKeySpki: Buffer.from('reencoded:spki-of-key-1') }),
      poolKey(2, { publicKeySpki: Buffer.from('reencoded:spki-of-key-2') }),
      poolKey(3),
    );
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome.record.error?.code).toBe('PUBLIC_KEY_NOT_CANONICAL');
    expect(outcome.record.signature).toBeUndefined();
    expect(h.appended.filter((e) => e.type === 'signature.made')).toEqual([]);
    expect(h.hsm.live.size).toBe(0);
  });
});

describe('empty pool', () => {
  test('fallback: a key generated on the fly, used in place, destroyed', async () => {
    const h = harness();
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome).toMatchObject({ status: 'signed' });
    expect(outcome.record.pooledKey).toBe(false);
    expect(h.hsm.calls).toContain('generateKeyPair');
    expect(h.metrics.counter('OnTheFlyFallbacks', 'EC-P256')).toBe(1);
    expect(h.hsm.live.size).toBe(0);
  });

  test('reject: POOL_EMPTY with the retry hint, nothing generated', async () => {
    const h = harness({ settings: { emptyPoolPolicy: 'reject', retryAfterSeconds: 45 } });
    const outcome = await processSignRequest(h.deps, received(h).id);
    expect(outcome).toMatchObject({ status: 'failed', retryAfterSeconds: 45 });
    expect(outcome.record.error?.code).toBe('POOL_EMPTY');
    expect(h.hsm.calls).toEqual([]);
  });

  describe('fallback bounded per key type: one generation in flight, a 2 s wait', () => {
    /** A harness whose first on-the-fly generation is held in the HSM until the test lets it finish. */
    function bounded(): { h: Harness; time: FakeTime; generating: ReturnType<typeof gate> } {
      const time = new FakeTime();
      const fallbackLimiter = new FallbackLimiter({
        maxInFlight: 1,
        waitMs: 2000,
        reclaimEveryMs: 500,
        clock: time.clock,
        timer: time.timer,
      });
      const h = harness({ fallbackLimiter, settings: { retryAfterSeconds: 45 } });
      const generating = gate();
      const generate = h.hsm.generateKeyPair.bind(h.hsm);
      let calls = 0;
      h.hsm.generateKeyPair = async (keyType) => {
        if (calls++ === 0) await generating.promise;
        return generate(keyType);
      };
      return { h, time, generating };
    }

    test('a request beyond the bound that finds neither a slot nor a key in time: POOL_EMPTY with the retry hint', async () => {
      const { h, time, generating } = bounded();
      const first = processSignRequest(h.deps, received(h).id);
      await settle();
      const second = processSignRequest(h.deps, received(h).id);
      await time.advance(2000);
      const refused = await second;
      expect(refused).toMatchObject({ status: 'failed', retryAfterSeconds: 45 });
      expect(refused.record.error).toMatchObject({ code: 'POOL_EMPTY' });
      expect(refused.record.error?.message).toMatch(/no on-the-fly generation was free; retry after 45 s/);
      expect(h.metrics.counter('PoolEmptyRejections', 'EC-P256')).toBe(1);
      generating.open();
      expect(await first).toMatchObject({ status: 'signed' });
      expect(h.hsm.calls.filter((c) => c === 'generateKeyPair')).toHaveLength(1);
      expect(h.hsm.live.size).toBe(0);
      expect(h.deps.fallbackLimiter!.inFlight('EC-P256')).toBe(0);
    });

    test('before the last delivery, a request that finds neither a slot nor a key is handed back, not failed: lease given up, taken over and signed by the next delivery', async () => {
      const { h, time, generating } = bounded();
      h.store.release = async (id, attemptId, now) => {
        const r = h.store.records.get(id);
        if (r?.status !== 'signing' || r.attemptId !== attemptId) return false;
        h.store.put({ ...r, leaseUntil: now });
        return true;
      };
      const first = processSignRequest(h.deps, received(h).id);
      await settle();
      const id = received(h).id;
      const second = processSignRequest(h.deps, id).catch((err: unknown) => err);
      await time.advance(2000);
      const handedBack = await second;
      expect(handedBack).toBeInstanceOf(KeyUnavailableError);
      expect((handedBack as KeyUnavailableError).retryAfterMs).toBe(45_000);
      expect(h.store.records.get(id)).toMatchObject({ status: 'signing', attempts: 1 });
      expect(h.store.records.get(id)!.leaseUntil).toBeLessThanOrEqual(Date.now());
      expect(h.metrics.counter('KeysUnavailable', 'EC-P256')).toBe(1);
      expect(h.metrics.counter('PoolEmptyRejections', 'EC-P256')).toBe(0);
      generating.open();
      expect(await first).toMatchObject({ status: 'signed' });
      // The next delivery takes the request over and signs it (a generation slot is free now).
      expect(await processSignRequest(h.deps, id)).toMatchObject({ status: 'signed' });
      expect(h.store.records.get(id)!.attempts).toBe(2);
      expect(h.hsm.live.size).toBe(0);
    });

    test('on the last delivery a request without a key ends POOL_EMPTY even when it could be handed back', async () => {
      const { h, time, generating } = bounded();
      h.store.release = async () => true;
      const first = processSignRequest(h.deps, received(h).id);
      await settle();
      const second = processSignRequest(h.deps, received(h).id, { lastDelivery: true });
      await time.advance(2000);
      expect((await second).record.error).toMatchObject({ code: 'POOL_EMPTY' });
      generating.open();
      await first;
    });

    test('a waiting request takes the slot the finishing generation frees', async () => {
      const { h, time, generating } = bounded();
      const first = processSignRequest(h.deps, received(h).id);
      await settle();
      const second = processSignRequest(h.deps, received(h).id);
      await time.advance(700);
      generating.open();
      expect(await first).toMatchObject({ status: 'signed' });
      const outcome = await second;
      expect(outcome).toMatchObject({ status: 'signed' });
      expect(outcome.record.pooledKey).toBe(false);
      expect(h.metrics.counter('OnTheFlyFallbacks', 'EC-P256')).toBe(2);
      expect(h.hsm.live.size).toBe(0);
    });

    test('a waiting request signs with a pool key stored meanwhile, without generating', async () => {
      const { h, time, generating } = bounded();
      const first = processSignRequest(h.deps, received(h).id);
      await settle();
      const second = processSignRequest(h.deps, received(h).id);
      await time.advance(400);
      h.pool.push(poolKey(1));
      await time.advance(100);
      const outcome = await second;
      expect(outcome).toMatchObject({ status: 'signed' });
      expect(outcome.record.pooledKey).toBe(true);
      generating.open();
      await first;
      expect(h.hsm.calls.filter((c) => c === 'generateKeyPair')).toHaveLength(1);
      expect(h.hsm.live.size).toBe(0);
    });

    test('a failed generation frees its slot too', async () => {
      const { h, time, generating } = bounded();
      h.hsm.failures.generateKeyPair = [hsmError('HsmError', 'CKR_DEVICE_ERROR')];
      generating.open();
      const failed = await processSignRequest(h.deps, received(h).id);
      expect(failed.record.error?.code).toBe('CKR_DEVICE_ERROR');
      expect(h.deps.fallbackLimiter!.inFlight('EC-P256')).toBe(0);
      const next = processSignRequest(h.deps, received(h).id);
      await time.advance(0);
      expect(await next).toMatchObject({ status: 'signed' });
    });

    test('reject policy: refused at once, the limiter is not asked', async () => {
      const { h } = bounded();
      h.deps.settings = { ...h.deps.settings, emptyPoolPolicy: 'reject' };
      const outcome = await processSignRequest(h.deps, received(h).id);
      expect(outcome.record.error?.code).toBe('POOL_EMPTY');
      expect(h.hsm.calls).toEqual([]);
    });
  });
});
