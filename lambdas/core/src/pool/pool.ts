/**
 * The key pool as the domain sees it: what a stored key is, the ports the pool store and the HSM offer to
 * the orchestration (fill, sign), and the small pure policies around them. No AWS, no PKCS#11 here: the
 * DynamoDB repository and the PKCS#11 adapter satisfy these interfaces structurally.
 */
import type { KeyType } from '../shared/algorithms';
import type { Hsm } from '../shared/hsm';

/** What to do when no pre-generated key of the requested type is left. */
export type EmptyPoolPolicy = 'fallback' | 'reject';

/** One wrapped key pair waiting in the pool to be used exactly once. */
export interface PoolKey {
  readonly keyId: string;
  readonly keyType: KeyType;
  /** Private key wrapped by the HSM's AES wrapping key: useless outside an HSM holding that key. */
  readonly wrappedKey: Buffer;
  /** SubjectPublicKeyInfo, DER. */
  readonly publicKeySpki: Buffer;
  /** Label (with version) of the wrapping key; unwrap uses the label stored with the key. */
  readonly wrapKeyLabel: string;
  /** HSM mechanism profile the key was wrapped under (softhsm, cloudhsm). */
  readonly hsmProfile: string;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  /** Epoch seconds (the table's TTL attribute): the key is never used at or after this time. */
  readonly expiresAt: number;
}

export interface AddKeysResult {
  /** Keys durably written. */
  readonly written: number;
  /** Keys not written: unprocessed after the retries ran out, or after a hard write failure. */
  readonly unwritten: number;
  /** Code of the hard failure that stopped the write, if any. */
  readonly errorCode?: string;
  /** Ids of the keys written, in input order (for the audit log's batch events). */
  readonly writtenKeyIds?: readonly string[];
}

/** What the API asks of the pool before it accepts a request. */
export interface PoolStatus {
  /** Available pool keys per key type (from counters, never a scan). */
  available(): Promise<Partial<Record<KeyType, number>>>;
}

/** The pool store (implemented by the DynamoDB KeyPoolRepository). */
export interface KeyPoolStore {
  /** Writes complete items only; counts per type/shard are maintained alongside. */
  add(keys: readonly PoolKey[]): Promise<AddKeysResult>;
  /**
   * Takes one unexpired key of the type and removes it in the same atomic step, so it can never be
   * taken again. Undefined only when no unexpired key of the type was left.
   */
  claim(keyType: KeyType, nowSeconds: number): Promise<PoolKey | undefined>;
  /** Available keys per type from the maintained counters (no scan). */
  available(keyTypes: readonly KeyType[]): Promise<Record<KeyType, number>>;
  /**
   * Deletes keys of the type that expired at or before nowSeconds; returns how many it removed and tells
   * onRemoved each removed key's id (for the audit log).
   */
  removeExpired(keyType: KeyType, nowSeconds: number, onRemoved?: (keyId: string) => void): Promise<number>;
}

/**
 * The HSM operations fill and sign need: a part of the one HSM port (shared/hsm.ts), which the PKCS#11
 * adapter implements whole.
 */
export type PoolHsm = Pick<
  Hsm,
  'generateKeyPair' | 'wrapPrivateKey' | 'unwrapPrivateKey' | 'signDigest' | 'destroy'
>;

/** Epoch seconds at which a key created at createdAtMs stops being usable. */
export function keyExpiresAt(createdAtMs: number, maxAgeSeconds: number): number {
  return Math.floor(createdAtMs / 1000) + maxAgeSeconds;
}

/** A key is usable strictly before its expiry second. */
export function isKeyUsable(key: Pick<PoolKey, 'expiresAt'>, nowSeconds: number): boolean {
  return key.expiresAt > nowSeconds;
}

/**
 * Shards in the order one claimer visits them: a random start, then every other shard once, so
 * concurrent claimers spread over partitions yet an empty answer means every shard was looked at.
 */
export function shardVisitOrder(shards: number, random: () => number = Math.random): number[] {
  const start = Math.floor(random() * shards) % shards;
  return Array.from({ length: shards }, (_, i) => (start + i) % shards);
}

/** In-place Fisher-Yates shuffle: claimers racing on one shard try its candidates in different orders. */
export function shuffle<T>(items: T[], random: () => number = Math.random): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
