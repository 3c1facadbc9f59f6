/**
 * Fault injection for resilience tests: wraps an Hsm so chosen operations fail at a given rate with a
 * named, retryable HsmError (code INJECTED_FAULT), before the real call is made; and, for load tests,
 * gives key generation (and signatures) of chosen types the latency of a network HSM. Only the local
 * runner and tests install it (decorateSharedHsm), when HSM_FAULT_RATE > 0 or HSM_KEYGEN_LATENCY_MS or
 * HSM_SIGN_LATENCY_MS is set; no deployed function contains it.
 */
import { ConfigError, parseKeyCounts, type Env } from '@pipeline/config';
import type { Hsm } from '@pipeline/adapters/hsm';
import { HsmBusyError, type KeyType } from '@pipeline/core/shared';

/** An injected failure: an HsmBusyError (callers retry it like a capacity error) with its own code. */
export class HsmInjectedFault extends HsmBusyError {
  public override name = 'HsmInjectedFault';
  /** Transient (retried) like the capacity error it plays. */
  public constructor(operation: string) {
    super(`${operation} failed: injected fault`, operation, undefined, 'INJECTED_FAULT');
  }
}

export interface FaultOptions {
  /** Probability in [0, 1] that a call of a chosen operation fails. */
  readonly rate: number;
  /** Operations that may fail; default: the cryptographic ones (not close, not the object counters). */
  readonly operations?: ReadonlyArray<keyof Hsm>;
  readonly random?: () => number;
  /** The error to throw; default HsmInjectedFault. */
  readonly error?: (operation: keyof Hsm) => Error;
}

export const DEFAULT_FAULT_OPERATIONS: ReadonlyArray<keyof Hsm> = [
  'generateKeyPair',
  'wrapPrivateKey',
  'unwrapPrivateKey',
  'signDigest',
  'destroy',
  'findPrivateKey',
  'findPublicKeySpki',
];

const HSM_OPERATIONS: ReadonlyArray<keyof Hsm> = [
  ...DEFAULT_FAULT_OPERATIONS,
  'ensureWrappingKey',
  'keyAttributes',
  'countSessionObjects',
  'close',
];

/** Returns an Hsm whose chosen operations reject at `rate`; the others pass straight through. */
export function withFaults(hsm: Hsm, options: FaultOptions): Hsm {
  if (!(options.rate >= 0 && options.rate <= 1)) throw new RangeError('fault rate must be within [0, 1]');
  const random = options.random ?? Math.random;
  const failing = new Set(options.operations ?? DEFAULT_FAULT_OPERATIONS);
  const makeError = options.error ?? ((op: keyof Hsm) => new HsmInjectedFault(op));
  const wrapped = {} as Record<keyof Hsm, unknown>;
  for (const op of HSM_OPERATIONS) {
    const real = (hsm[op] as (...args: unknown[]) => Promise<unknown>).bind(hsm);
    wrapped[op] = failing.has(op)
      ? (...args: unknown[]) => (random() < options.rate ? Promise.reject(makeError(op)) : real(...args))
      : real;
  }
  return wrapped as unknown as Hsm;
}

/** HSM_FAULT_RATE (0..1, default 0 = off) and HSM_FAULT_OPERATIONS (comma-separated Hsm method names). */
export function loadFaultOptions(env: Env = process.env): FaultOptions | undefined {
  const raw = env.HSM_FAULT_RATE;
  if (raw === undefined || raw === '') return undefined;
  const rate = Number(raw);
  if (!Number.isFinite(rate) || rate < 0 || rate > 1) {
    throw new ConfigError('HSM_FAULT_RATE must be a number from 0 to 1', 'HSM_FAULT_RATE');
  }
  if (rate === 0) return undefined;
  const list = env.HSM_FAULT_OPERATIONS?.split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  for (const op of list ?? []) {
    if (!(HSM_OPERATIONS as readonly string[]).includes(op)) {
      throw new ConfigError(`HSM_FAULT_OPERATIONS: unknown operation ${op}`, 'HSM_FAULT_OPERATIONS');
    }
  }
  return { rate, operations: list as Array<keyof Hsm> | undefined };
}

/**
 * Each key generated of a listed type takes `latencyMs` more: a network HSM's generation time (a Luna
 * takes ~673 ms for RSA-2048 where SoftHSM takes ~330 ms of this machine's CPU). The wait holds no
 * core, as on a remote HSM, so a load test sees the time a generation keeps its caller waiting rather
 * than this machine's CPU.
 */
export function withKeygenLatency(
  hsm: Hsm,
  latencyMs: Partial<Record<KeyType, number>>,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Hsm {
  const generate = hsm.generateKeyPair.bind(hsm);
  const wrapped = Object.fromEntries(
    HSM_OPERATIONS.map((op) => [op, (hsm[op] as (...args: unknown[]) => unknown).bind(hsm)]),
  ) as unknown as Hsm;
  wrapped.generateKeyPair = async (keyType, options) => {
    const pair = await generate(keyType, options);
    await sleep(latencyMs[keyType] ?? 0);
    return pair;
  };
  return wrapped;
}

/**
 * Each signature with a one-time key (a session object, not a token key such as the CA's or the audit
 * key) of a listed type takes `latencyMs` more, after the HSM made it: a fault test's window between a
 * one-time key's signatures (its CSR's, then the document's) and what follows.
 */
export function withSignLatency(
  hsm: Hsm,
  latencyMs: Partial<Record<KeyType, number>>,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Hsm {
  const sign = hsm.signDigest.bind(hsm);
  const wrapped = Object.fromEntries(
    HSM_OPERATIONS.map((op) => [op, (hsm[op] as (...args: unknown[]) => unknown).bind(hsm)]),
  ) as unknown as Hsm;
  wrapped.signDigest = async (key, digest, options) => {
    const signature = await sign(key, digest, options);
    await sleep(key.token ? 0 : (latencyMs[key.keyType] ?? 0));
    return signature;
  };
  return wrapped;
}

/** HSM_KEYGEN_LATENCY_MS: extra milliseconds per generated key, per type (`RSA-2048=700`). */
export function loadKeygenLatency(env: Env = process.env): Partial<Record<KeyType, number>> | undefined {
  const raw = env.HSM_KEYGEN_LATENCY_MS;
  if (raw === undefined || raw === '') return undefined;
  return parseKeyCounts(raw, 'HSM_KEYGEN_LATENCY_MS');
}

/** HSM_SIGN_LATENCY_MS: extra milliseconds per signature, per type of the signing key (`EC-P384=4000`). */
export function loadSignLatency(env: Env = process.env): Partial<Record<KeyType, number>> | undefined {
  const raw = env.HSM_SIGN_LATENCY_MS;
  if (raw === undefined || raw === '') return undefined;
  return parseKeyCounts(raw, 'HSM_SIGN_LATENCY_MS');
}

/**
 * The wiring's one call: the HSM itself, or wrapped with faults when HSM_FAULT_RATE is set, with
 * generation latency when HSM_KEYGEN_LATENCY_MS is and signature latency when HSM_SIGN_LATENCY_MS is.
 */
export function maybeWithFaults(hsm: Hsm, env: Env = process.env): Hsm {
  const options = loadFaultOptions(env);
  const latency = loadKeygenLatency(env);
  const signLatency = loadSignLatency(env);
  const slowKeygen = latency ? withKeygenLatency(hsm, latency) : hsm;
  const slow = signLatency ? withSignLatency(slowKeygen, signLatency) : slowKeygen;
  return options ? withFaults(slow, options) : slow;
}
