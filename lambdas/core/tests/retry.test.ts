import {
  HsmBusyError,
  HsmSessionError,
  HsmUnwrapError,
  PipelineError,
  isTransient,
  retryTransient,
} from '../src/shared';

const busy = (): Error => new HsmBusyError('busy', 'sign');
const policy = { attempts: 3, baseDelayMs: 100, maxDelayMs: 150 };

describe('retryTransient', () => {
  test('retries transient failures with capped full-jitter backoff, then succeeds', async () => {
    const delays: number[] = [];
    let calls = 0;
    const result = await retryTransient(
      async () => {
        if (++calls < 3) throw busy();
        return 'ok';
      },
      policy,
      { sleep: async (ms) => void delays.push(ms), random: () => 0.999 },
    );
    expect(result).toBe('ok');
    expect(calls).toBe(3);
    // 100 * 2^0, then 100 * 2^1 capped at 150 (random just under 1).
    expect(delays).toEqual([99, 149]);
  });

  test('gives up after the policy attempts and rethrows the last failure', async () => {
    let calls = 0;
    const attempt = retryTransient(
      async () => {
        calls++;
        throw busy();
      },
      policy,
      { sleep: async () => undefined },
    );
    await expect(attempt).rejects.toThrow('busy');
    expect(calls).toBe(3);
  });

  test('does not retry a permanent failure', async () => {
    let calls = 0;
    const attempt = retryTransient(
      async () => {
        calls++;
        throw Object.assign(new Error('bad csr'), { code: 'BAD_CSR' });
      },
      policy,
      { sleep: async () => undefined },
    );
    await expect(attempt).rejects.toThrow('bad csr');
    expect(calls).toBe(1);
  });
});

test('isTransient recognises failures that say they are transient, not names or codes', () => {
  expect(isTransient(busy())).toBe(true);
  expect(isTransient(new HsmSessionError('session lost', 'sign'))).toBe(true);
  expect(isTransient(new PipelineError('CA down', 'CA_UNAVAILABLE', { transient: true }))).toBe(true);
  expect(isTransient(new HsmUnwrapError('rejected', 'unwrap', 0x110, 'CKR_WRAPPED_KEY_INVALID'))).toBe(false);
  // A look-alike by name or code is not transient: only the flag counts.
  expect(isTransient(Object.assign(new Error('busy'), { name: 'HsmBusyError' }))).toBe(false);
  expect(isTransient({ code: 'CA_UNAVAILABLE' })).toBe(false);
  expect(isTransient(undefined)).toBe(false);
  expect(isTransient('CA_UNAVAILABLE')).toBe(false);
});

test('a PipelineError carries its cause (ES2022 error options), code and transient flag', () => {
  const cause = new Error('socket hang up');
  const err = new PipelineError('the CA could not be reached', 'CA_UNAVAILABLE', { cause, transient: true });
  expect(err.cause).toBe(cause);
  expect(err).toBeInstanceOf(Error);
  expect([err.code, err.transient, err.name]).toEqual(['CA_UNAVAILABLE', true, 'PipelineError']);
  expect(new PipelineError('no cause', 'X_Y')).not.toHaveProperty('cause');
});
