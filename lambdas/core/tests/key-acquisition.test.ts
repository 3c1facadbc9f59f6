/**
 * Key acquisition and the discard policy: unusable pool keys discarded (another profile, rejected by
 * unwrap, a public key not its own, certified before, stored non-canonical) up to their limits, and the
 * empty pool under each policy (POOL_EMPTY, generation on the fly, bounded, handed back).
 */
import { createHash } from 'node:crypto';
import { KeyUnavailableError, processSignRequest } from '../src/signing';
import { FallbackLimiter } from '../src/pool';
import { FakeTime, gate, harness, hsmError, poolKey, received, settle, type Harness } from './fakes';

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
