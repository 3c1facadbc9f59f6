/**
 * The key pool's table layout (one table, pk/sk strings, TTL attribute `expiresAt`):
 *   bundle item   pk = `KEY#<keyType>#<shard>`   sk = `<expiresAt, 10 digits>#<first keyId>`
 *                 keys = [{ keyId, wrappedKey, publicKeySpki, createdAt, expiresAt }, ...], keyCount
 *   shard counter pk = `KEY#<keyType>#<shard>`   sk = `#COUNT`   available = N (keys, not items)
 *
 * Keys are stored in bundles of up to `bundleSize` keys of one type per item (their earliest expiry is
 * the bundle's): one claim, one write and one TTL deletion per bundle instead of per key. Ordering by
 * expiry lets a query skip expired keys in the key condition itself (TTL deletion lags by up to days)
 * and hands out the oldest keys first. The counter ('#' sorts before digits) never matches that
 * condition.
 */
import type { KeyType } from '@pipeline/core/shared';
import type { PoolKey } from '@pipeline/core/pool';

export const COUNTER_SK = '#COUNT';
/** 100 RSA-4096 keys (about 3 KB each wrapped, with the public key) stay well under the 400 KB item limit. */
export const MAX_BUNDLE_SIZE = 100;

interface BundledKey {
  keyId: string;
  wrappedKey: Uint8Array;
  publicKeySpki: Uint8Array;
  createdAt: number;
  expiresAt: number;
}

export interface BundleItem {
  pk: string;
  sk: string;
  keyType: KeyType;
  shard: number;
  wrapKeyLabel: string;
  hsmProfile: string;
  /** The earliest expiry of its keys: the bundle leaves the pool (TTL, removeExpired) with it. */
  expiresAt: number;
  keyCount: number;
  keys: BundledKey[];
}

/** Where a bundle is: all a claim needs to try it. */
export interface Candidate {
  pk: string;
  sk: string;
}

export function shardPk(keyType: KeyType, shard: number): string {
  return `KEY#${keyType}#${shard}`;
}

/** Sort key: expiry first (10-digit epoch seconds sort lexicographically), then the first key's id for uniqueness. */
export function keySk(expiresAt: number, keyId: string): string {
  return `${expiryPrefix(expiresAt)}#${keyId}`;
}

export function expiryPrefix(epochSeconds: number): string {
  return String(Math.max(0, Math.floor(epochSeconds))).padStart(10, '0');
}

/** Bundles of up to bundleSize consecutive keys sharing type, wrapping key and profile; shards round-robin. */
export class Bundler {
  /** Round-robin shard for added keys, from a random start per process. */
  private nextShard: number;

  public constructor(
    private readonly bundleSize: number,
    private readonly shards: number,
    random: () => number,
  ) {
    if (!Number.isInteger(bundleSize) || bundleSize < 1 || bundleSize > MAX_BUNDLE_SIZE)
      throw new RangeError(`bundleSize must be an integer in 1..${MAX_BUNDLE_SIZE}`);
    this.nextShard = Math.floor(random() * shards);
  }

  public bundle(keys: readonly PoolKey[]): BundleItem[] {
    const groups = new Map<string, PoolKey[]>();
    for (const key of keys) {
      const group = `${key.keyType}|${key.wrapKeyLabel}|${key.hsmProfile}`;
      groups.set(group, [...(groups.get(group) ?? []), key]);
    }
    const bundles: BundleItem[] = [];
    for (const group of groups.values()) {
      for (let i = 0; i < group.length; i += this.bundleSize) {
        const members = group.slice(i, i + this.bundleSize);
        const shard = this.nextShard;
        this.nextShard = (this.nextShard + 1) % this.shards;
        const expiresAt = Math.min(...members.map((key) => key.expiresAt));
        bundles.push({
          pk: shardPk(members[0].keyType, shard),
          sk: keySk(expiresAt, members[0].keyId),
          keyType: members[0].keyType,
          shard,
          wrapKeyLabel: members[0].wrapKeyLabel,
          hsmProfile: members[0].hsmProfile,
          expiresAt,
          keyCount: members.length,
          keys: members.map((key) => ({
            keyId: key.keyId,
            wrappedKey: key.wrappedKey,
            publicKeySpki: key.publicKeySpki,
            createdAt: key.createdAt,
            expiresAt: key.expiresAt,
          })),
        });
      }
    }
    return bundles;
  }
}

export function fromBundle(item: BundleItem): PoolKey[] {
  return item.keys.map((key) => ({
    keyId: key.keyId,
    keyType: item.keyType,
    wrappedKey: Buffer.from(key.wrappedKey),
    publicKeySpki: Buffer.from(key.publicKeySpki),
    wrapKeyLabel: item.wrapKeyLabel,
    hsmProfile: item.hsmProfile,
    createdAt: Number(key.createdAt),
    expiresAt: Number(key.expiresAt),
  }));
}
