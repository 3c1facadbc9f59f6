import { ConfigError } from '@pipeline/config';
import type { Hsm } from '@pipeline/adapters/hsm';
import { HsmBusyError, HsmError } from '@pipeline/core/shared';
import {
  HsmInjectedFault,
  loadFaultOptions,
  loadKeygenLatency,
  loadSignLatency,
  maybeWithFaults,
  withFaults,
  withKeygenLatency,
  withSignLatency,
} from '../hsm-fault-injection';
// Seeded so the rate check cannot flake.
import { mulberry32 } from '../../../simulate/rng';

/** A stand-in Hsm that counts the calls that reached it (the wrapper is what is under test). */
function countingHsm(): { hsm: Hsm; calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  const hit = (op: string) => async () => {
    calls[op] = (calls[op] ?? 0) + 1;
    return undefined;
  };
  const ops = [
    'generateKeyPair',
    'wrapPrivateKey',
    'unwrapPrivateKey',
    'signDigest',
    'destroy',
    'findPrivateKey',
    'findPublicKeySpki',
    'ensureWrappingKey',
    'keyAttributes',
    'countSessionObjects',
    'close',
  ];
  return { hsm: Object.fromEntries(ops.map((op) => [op, hit(op)])) as unknown as Hsm, calls };
}

async function failures(hsm: Hsm, op: 'signDigest' | 'destroy', n: number): Promise<number> {
  let failed = 0;
  for (let i = 0; i < n; i++) {
    try {
      await (hsm[op] as () => Promise<unknown>)();
    } catch (err) {
      expect(err).toBeInstanceOf(HsmInjectedFault);
      failed++;
    }
  }
  return failed;
}

describe('withFaults', () => {
  it('fails about `rate` of the calls, with a named retryable HsmError, before reaching the HSM', async () => {
    const { hsm, calls } = countingHsm();
    const faulty = withFaults(hsm, { rate: 0.2, random: mulberry32(42) });
    const failed = await failures(faulty, 'signDigest', 5000);
    expect(failed / 5000).toBeGreaterThan(0.18);
    expect(failed / 5000).toBeLessThan(0.22);
    expect(calls.signDigest).toBe(5000 - failed);
    const always = withFaults(hsm, { rate: 1 });
    const err = await always.unwrapPrivateKey(Buffer.alloc(0), 'EC-P256', 'w').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HsmBusyError);
    expect(err).toMatchObject({ code: 'INJECTED_FAULT', operation: 'unwrapPrivateKey' });
  });

  it('leaves excluded operations alone (destroy of session objects must still clean up)', async () => {
    const { hsm, calls } = countingHsm();
    const faulty = withFaults(hsm, { rate: 1, operations: ['signDigest', 'unwrapPrivateKey'] });
    expect(await failures(faulty, 'destroy', 100)).toBe(0);
    expect(calls.destroy).toBe(100);
    expect(await failures(faulty, 'signDigest', 10)).toBe(10);
    await faulty.close();
    expect(calls.close).toBe(1);
  });

  it('throws the configured error', async () => {
    const { hsm } = countingHsm();
    const faulty = withFaults(hsm, { rate: 1, error: (op) => new HsmError(`${op} boom`, op) });
    await expect(faulty.signDigest({} as never, Buffer.alloc(32), {} as never)).rejects.toThrow(
      'signDigest boom',
    );
  });
});

describe('fault configuration', () => {
  it('is off unless HSM_FAULT_RATE is set above zero', () => {
    const { hsm } = countingHsm();
    expect(maybeWithFaults(hsm, {})).toBe(hsm);
    expect(maybeWithFaults(hsm, { HSM_FAULT_RATE: '0' })).toBe(hsm);
    expect(maybeWithFaults(hsm, { HSM_FAULT_RATE: '0.1' })).not.toBe(hsm);
    expect(
      loadFaultOptions({ HSM_FAULT_RATE: '0.5', HSM_FAULT_OPERATIONS: 'signDigest, unwrapPrivateKey' }),
    ).toEqual({ rate: 0.5, operations: ['signDigest', 'unwrapPrivateKey'] });
  });

  it('rejects a bad rate or an unknown operation, naming the variable', () => {
    expect(() => loadFaultOptions({ HSM_FAULT_RATE: '2' })).toThrow(ConfigError);
    expect(() => loadFaultOptions({ HSM_FAULT_RATE: '0.1', HSM_FAULT_OPERATIONS: 'format' })).toThrow(
      /HSM_FAULT_OPERATIONS/,
    );
  });
});

describe('withKeygenLatency', () => {
  it('delays generation of the listed key types only, after the real call', async () => {
    const { hsm, calls } = countingHsm();
    const slept: number[] = [];
    const slow = withKeygenLatency(hsm, { 'RSA-2048': 700 }, async (ms) => {
      slept.push(ms);
    });
    await slow.generateKeyPair('RSA-2048', { extractable: false });
    await slow.generateKeyPair('EC-P256', { extractable: false });
    await slow.signDigest({} as never, Buffer.alloc(32), {
      digestAlgorithm: 'SHA-256',
      signatureAlgorithm: 'ECDSA',
    });
    expect(slept).toEqual([700, 0]);
    expect(calls).toEqual({ generateKeyPair: 2, signDigest: 1 });
  });

  it('HSM_KEYGEN_LATENCY_MS: per key type; malformed is a ConfigError; alone it installs no faults', async () => {
    expect(loadKeygenLatency({})).toBeUndefined();
    expect(loadKeygenLatency({ HSM_KEYGEN_LATENCY_MS: 'RSA-2048=700,RSA-3072=1500' })).toEqual({
      'RSA-2048': 700,
      'RSA-3072': 1500,
    });
    expect(() => loadKeygenLatency({ HSM_KEYGEN_LATENCY_MS: 'RSA-2048=slow' })).toThrow(ConfigError);
    const { hsm, calls } = countingHsm();
    const wrapped = maybeWithFaults(hsm, { HSM_KEYGEN_LATENCY_MS: 'EC-P256=1' });
    expect(wrapped).not.toBe(hsm);
    await wrapped.generateKeyPair('EC-P256', { extractable: false });
    expect(calls.generateKeyPair).toBe(1);
  });
});

describe('withSignLatency', () => {
  it('delays signatures with one-time keys of the listed types only, after the real call; HSM_SIGN_LATENCY_MS installs it', async () => {
    const { hsm, calls } = countingHsm();
    const slept: number[] = [];
    const slow = withSignLatency(hsm, { 'EC-P384': 4000 }, async (ms) => {
      slept.push(ms);
    });
    const options = { digestAlgorithm: 'SHA-256', signatureAlgorithm: 'ECDSA' } as const;
    await slow.signDigest({ keyType: 'EC-P384', token: false } as never, Buffer.alloc(32), options);
    await slow.signDigest({ keyType: 'EC-P256', token: false } as never, Buffer.alloc(32), options);
    // A token key of the type (the audit key, a CA key) signs at the HSM's own pace.
    await slow.signDigest({ keyType: 'EC-P384', token: true } as never, Buffer.alloc(32), options);
    await slow.generateKeyPair('EC-P384', { extractable: false });
    expect(slept).toEqual([4000, 0, 0]);
    expect(calls).toEqual({ signDigest: 3, generateKeyPair: 1 });
    expect(loadSignLatency({})).toBeUndefined();
    expect(loadSignLatency({ HSM_SIGN_LATENCY_MS: 'EC-P384=4000' })).toEqual({ 'EC-P384': 4000 });
    expect(() => loadSignLatency({ HSM_SIGN_LATENCY_MS: 'EC-P384=slow' })).toThrow(ConfigError);
    expect(maybeWithFaults(hsm, { HSM_SIGN_LATENCY_MS: 'EC-P384=1' })).not.toBe(hsm);
  });
});
