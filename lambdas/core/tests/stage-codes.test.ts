/**
 * Stage failures as the client sees them: each stage's code (STAGE_CODES), a cause's own client-visible
 * code kept (requestErrorFor), and that a failed attempt leaves no HSM object.
 */
import { processSignRequest, requestErrorFor, type SigningStage } from '../src/signing';
import { harness, hsmError, poolKey, received, type Harness } from './fakes';

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

  test.each([
    ['one document', {}],
    [
      'documents',
      {
        documents: [
          {
            digest: Buffer.alloc(32).toString('base64'),
            digestAlgorithm: 'SHA-256',
            format: 'cms',
            profile: 'CAdES-B-B',
            level: 'B-B',
          },
        ],
      },
    ],
  ] as const)(
    '%s: a container that fails to finish -> CONTAINER_FAILED, nothing stored of it',
    async (_, documents) => {
      const h = harness({
        buildContainer: () => ({
          toBeSigned: Buffer.alloc(32),
          finish: () => {
            throw new Error('bad container');
          },
        }),
      });
      h.pool.push(poolKey(1));
      const record = received(h, { format: 'cms', profile: 'CAdES-B-B', ...documents });
      const outcome = await processSignRequest(h.deps, record.id);
      expect(outcome.status).toBe('failed');
      expect(outcome.record.error?.code).toBe('CONTAINER_FAILED');
      expect(outcome.record).not.toHaveProperty('documentResults');
      expect(h.hsm.live.size).toBe(0);
    },
  );

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

describe('requestErrorFor: the stored error of a failed stage', () => {
  test("a cause without a code: the stage's code, and a message of the stage and the cause's name", () => {
    expect(requestErrorFor('timestamp', new TypeError('socket hang up at 10.0.0.1'))).toEqual({
      code: 'TSA_UNAVAILABLE',
      message: 'timestamp failed: TypeError (TypeError)',
    });
  });

  test('a registry code or a PKCS#11 CKR name of the cause is kept', () => {
    const refused = Object.assign(new Error('refused'), { code: 'ASSERTION_EXPIRED' });
    expect(requestErrorFor('issue', refused).code).toBe('ASSERTION_EXPIRED');
    expect(requestErrorFor('sign', hsmError('HsmError', 'CKR_DEVICE_ERROR')).code).toBe('CKR_DEVICE_ERROR');
  });

  test("an internal code stays in the message, behind the stage's code", () => {
    const internal = Object.assign(new Error('x'), { name: 'LogError', code: 'HEAD_NOT_SIGNED_INTERNAL' });
    expect(requestErrorFor('audit', internal)).toEqual({
      code: 'AUDIT_WRITE_FAILED',
      message: 'audit failed: LogError (HEAD_NOT_SIGNED_INTERNAL)',
    });
  });

  test('a thrown non-error: the stage\'s code, named "error"', () => {
    expect(requestErrorFor('claim', 'boom')).toEqual({
      code: 'POOL_CLAIM_FAILED',
      message: 'claim failed: error (UNKNOWN_ERROR)',
    });
  });
});
