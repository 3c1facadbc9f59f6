/**
 * Whether the API accepts one more sign request of a key type, before it accepts it: an accepted request
 * is signed (from the pool, on the fly, or after waiting for keygen), so a request no key can come for in
 * time is refused instead (503 KEYS_UNAVAILABLE, Retry-After), and the e-service retries. And no client
 * drains a key type for everyone: the last keys are shared (429 CLIENT_SHARE_EXCEEDED, Retry-After).
 *
 * For a key type, with
 *
 *   capacity  = available pool keys + (policy `fallback`: POOL_ADMISSION_ON_THE_FLY, what on-the-fly
 *               generation and keygen serve in time beyond the pool; `reject`: 0)
 *   open      = its open requests (received or signing), mine = those of this client,
 *   others    = the other clients with open requests of the type,
 *   reserve   = POOL_CLIENT_RESERVE,
 *
 * the caller's share is max(1, capacity - reserve) (one client never takes the reserve, which stays for
 * the others), and when others > 0 and open >= capacity - reserve (the pool is into its reserve) at most
 * ceil(capacity / (others + 1)) (an equal share each). A request is refused
 *   1. CLIENT_SHARE_EXCEEDED when mine >= share, also when the others' requests have filled the capacity
 *      (it would be refused with keys to spare), unless its share is the whole capacity (then 2);
 *   2. KEYS_UNAVAILABLE      otherwise when open >= capacity (under `reject` with no key at all:
 *      POOL_EMPTY, 429).
 * Requests count by their weight (request-weight.ts: one document 1, 50 B-LT documents 10): `open` and
 * `mine` are sums of weights, and a request of weight w is refused when open + w > capacity or
 * mine + w > share (w at most max(1, capacity - reserve), so that a heavy request can pass an idle pool).
 * Pure: the API supplies the counts (pool counters, the open-requests index) and answers the refusal.
 */
import type { KeyType } from '../shared/algorithms';
import type { EmptyPoolPolicy } from './pool';

/** Open sign requests (received or signing) per key type, in all and per client: the sum of their weights. */
export interface OpenRequestCounts {
  readonly byType: Partial<Record<KeyType, number>>;
  readonly byClient: Partial<Record<KeyType, Readonly<Record<string, number>>>>;
}

export interface AdmissionSettings {
  readonly policy: EmptyPoolPolicy;
  /** Under `fallback`: open requests beyond the pool's keys that on-the-fly generation serves in time. */
  readonly onTheFly: number;
  /** The last keys of a type's capacity, kept for clients below their share. */
  readonly clientReserve: number;
}

export type AdmissionDecision =
  | { readonly kind: 'accept' }
  | {
      readonly kind: 'refuse';
      readonly code: 'KEYS_UNAVAILABLE' | 'CLIENT_SHARE_EXCEEDED' | 'POOL_EMPTY';
      readonly message: string;
    };

export function admitSignRequest(
  input: {
    readonly keyType: KeyType;
    readonly clientId: string;
    /** Available pool keys of the type (the counters). */
    readonly available: number;
    readonly open: OpenRequestCounts;
    /** This request's weight (requestWeight); default 1. */
    readonly weight?: number;
  },
  settings: AdmissionSettings,
): AdmissionDecision {
  const { keyType, clientId } = input;
  const available = Math.max(0, input.available);
  if (settings.policy === 'reject' && available === 0) {
    return { kind: 'refuse', code: 'POOL_EMPTY', message: `no ${keyType} key is available, retry later` };
  }
  const capacity = available + (settings.policy === 'fallback' ? settings.onTheFly : 0);
  const open = input.open.byType[keyType] ?? 0;
  const clients = input.open.byClient[keyType] ?? {};
  const mine = clients[clientId] ?? 0;
  const others = Object.entries(clients).filter(([id, n]) => id !== clientId && n > 0).length;
  // The caller's share: one client never takes the reserve; in the reserve, an equal share each.
  const unreserved = capacity - settings.clientReserve;
  const share = Math.min(
    Math.max(1, unreserved),
    others > 0 && open >= unreserved ? Math.ceil(capacity / (others + 1)) : Number.POSITIVE_INFINITY,
  );
  const weight = Math.min(Math.max(1, input.weight ?? 1), Math.max(1, unreserved));
  const overShare = mine + weight > share;
  // At the capacity a client over a share below it is told its share (it would be refused with keys to
  // spare); the others that no key can come in time.
  if (open + weight > capacity && !(overShare && share < capacity)) {
    return {
      kind: 'refuse',
      code: 'KEYS_UNAVAILABLE',
      message: `no ${keyType} key can come in time for another request, retry later`,
    };
  }
  if (overShare) {
    return {
      kind: 'refuse',
      code: 'CLIENT_SHARE_EXCEEDED',
      message: `this client holds its share of the open ${keyType} requests while the pool is low, retry later`,
    };
  }
  return { kind: 'accept' };
}
