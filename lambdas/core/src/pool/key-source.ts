/**
 * Where a request's one-time key comes from, as a strategy port: the signing attempt asks its KeySource
 * for the next key and acts on the answer, whatever the policy behind it.
 *
 *   pooled    a pool key, claimed (deleted from the table in the same step) and still wrapped;
 *   generate  no pool key: generate one on the fly in the HSM (release frees the generation slot after);
 *   refused   no pool key and no generation: the request ends POOL_EMPTY.
 *
 * The strategies: the pool first (poolKeySource), and when it has none of the type, on the fly
 * (onTheFlyKeySource, bounded by the FallbackLimiter when there is one) or none (rejectKeySource, the
 * `reject` policy), as POOL_EMPTY_POLICY says (keySourceFor).
 */
import type { KeyType } from '../shared/algorithms';
import type { FallbackLimiter, ReleaseSlot } from './fallback-limiter';
import type { EmptyPoolPolicy, KeyPoolStore, PoolKey } from './pool';

export type KeySourcing =
  | { readonly kind: 'pooled'; readonly key: PoolKey }
  | { readonly kind: 'generate'; readonly release?: ReleaseSlot }
  | { readonly kind: 'refused'; readonly reason?: string };

export interface KeySource {
  /**
   * `client`: whose request asks (the fallback's generations are split between clients);
   * `lastChanceWaitMs`: the request has no later delivery, it may wait this long for a generation.
   */
  next(keyType: KeyType, client?: string, lastChanceWaitMs?: number): Promise<KeySourcing>;
}

/** Claims one unexpired pool key of a type (undefined when there is none). */
type Claim = (keyType: KeyType) => Promise<PoolKey | undefined>;

/** Never a key: the `reject` policy once the pool is empty. */
export const rejectKeySource: KeySource = { next: async () => ({ kind: 'refused' }) };

/**
 * On the fly. With a limiter, a generation waits for a slot of its key type, looking in the pool again
 * meanwhile (a key keygen stored is taken instead), and is refused when none was free in time.
 */
export function onTheFlyKeySource(claim: Claim, limiter?: FallbackLimiter): KeySource {
  return {
    next: async (keyType, client, lastChanceWaitMs) => {
      if (!limiter) return { kind: 'generate' };
      const decision = await limiter.acquire(keyType, () => claim(keyType), client, lastChanceWaitMs);
      if (decision.kind === 'refused')
        return { kind: 'refused', reason: 'no on-the-fly generation was free' };
      if (decision.kind === 'key') return { kind: 'pooled', key: decision.key };
      return { kind: 'generate', release: decision.release };
    },
  };
}

/** The pool first; when it has no key of the type, whenEmpty decides. */
export function poolKeySource(claim: Claim, whenEmpty: KeySource): KeySource {
  return {
    next: async (keyType, client, lastChanceWaitMs) => {
      const key = await claim(keyType);
      return key ? { kind: 'pooled', key } : whenEmpty.next(keyType, client, lastChanceWaitMs);
    },
  };
}

/** The key source of a POOL_EMPTY_POLICY: the pool, then on the fly (`fallback`) or refuse (`reject`). */
export function keySourceFor(input: {
  readonly pool: Pick<KeyPoolStore, 'claim'>;
  readonly policy: EmptyPoolPolicy;
  /** Bounds on-the-fly generation under `fallback`; without it every such request generates at once. */
  readonly limiter?: FallbackLimiter;
  /** Epoch ms: expired keys are never claimed. */
  readonly clock: () => number;
}): KeySource {
  const claim: Claim = (keyType) => input.pool.claim(keyType, Math.floor(input.clock() / 1000));
  const whenEmpty = input.policy === 'reject' ? rejectKeySource : onTheFlyKeySource(claim, input.limiter);
  return poolKeySource(claim, whenEmpty);
}
