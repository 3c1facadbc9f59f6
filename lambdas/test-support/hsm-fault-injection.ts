/**
 * Fault injection for resilience tests: wraps an Hsm so chosen operations fail at a given rate with a
 * named, retryable HsmError (code INJECTED_FAULT), before the real call is made. Only the local runner
 * and tests install it (decorateSharedHsm), when HSM_FAULT_RATE > 0; no deployed function contains it.
 */
import { ConfigError, type Env } from '../config/src';
import { HsmBusyError, type Hsm } from '../adapters/hsm/src';

/** An injected failure: an HsmBusyError (callers retry it like a capacity error) with its own code. */
export class HsmInjectedFault extends HsmBusyError {
  public override name = 'HsmInjectedFault';
  public override readonly code = 'INJECTED_FAULT';
  /** Retried like the capacity error it plays. */
  public readonly transient = true;
  public constructor(operation: string) {
    super(`${operation} failed: injected fault`, operation);
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

/** The wiring's one call: the HSM itself, or wrapped with faults when HSM_FAULT_RATE is set. */
export function maybeWithFaults(hsm: Hsm, env: Env = process.env): Hsm {
  const options = loadFaultOptions(env);
  return options ? withFaults(hsm, options) : hsm;
}
