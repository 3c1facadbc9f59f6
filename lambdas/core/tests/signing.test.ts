/**
 * The signing core's deliveries with in-memory fakes of its ports: fresh, replay, busy, takeover, lost
 * races, superseded attempts, and the attempt's run to a stored outcome. Stage failures and their codes are
 * in stage-codes.test.ts, keys and the empty pool in key-acquisition.test.ts.
 */
import {
  AttemptSupersededError,
  RequestInProgressError,
  RequestNotFoundError,
  processSignRequest,
  type StoredSignRequest,
} from '../src/signing';
import { harness, poolKey, received } from './fakes';

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
