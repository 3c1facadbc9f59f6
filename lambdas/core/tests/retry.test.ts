import { isTransient, retryTransient } from '../src';

const busy = (): Error => Object.assign(new Error('busy'), { name: 'HsmBusyError' });
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

test('isTransient recognises capacity, session and CA-unavailable failures by name or code only', () => {
  expect(isTransient(busy())).toBe(true);
  expect(isTransient({ name: 'HsmSessionError' })).toBe(true);
  expect(isTransient({ code: 'CA_UNAVAILABLE' })).toBe(true);
  expect(isTransient({ name: 'HsmUnwrapError', code: 'CKR_WRAPPED_KEY_INVALID' })).toBe(false);
  expect(isTransient(undefined)).toBe(false);
  expect(isTransient('CA_UNAVAILABLE')).toBe(false);
});
