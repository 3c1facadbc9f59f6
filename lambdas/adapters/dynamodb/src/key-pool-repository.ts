/**
 * The key pool in DynamoDB.
 *
 * Table layout (one table, pk/sk strings, TTL attribute `expiresAt`):
 *   bundle item   pk = `KEY#<keyType>#<shard>`   sk = `<expiresAt, 10 digits>#<first keyId>`
 *                 keys = [{ keyId, wrappedKey, publicKeySpki, createdAt, expiresAt }, ...], keyCount
 *   shard counter pk = `KEY#<keyType>#<shard>`   sk = `#COUNT`   available = N (keys, not items)
 *
 * - Keys are stored in bundles of up to `bundleSize` keys of one type per item (their earliest expiry is
 *   the bundle's): one claim, one write and one TTL deletion per bundle instead of per key. A process
 *   holds the other keys of a bundle it claimed and hands them out to its next claims, each once; keys
 *   held by a process that ends unused are lost to the pool (never served twice).
 *
 * - "Any available key of type T" is one Query on a random shard: `pk = :p AND sk > :now`, strongly
 *   consistent, a few items. Ordering by expiry makes the query skip expired keys in the key condition
 *   itself (TTL deletion lags by up to days) and hands out the oldest keys first.
 * - Shards spread concurrent claimers over partitions; a claimer visits every shard before it calls the
 *   pool empty.
 * - A claim is a conditional DeleteItem with ReturnValues ALL_OLD: the bundle ceases to exist in the
 *   same atomic step that hands it to one process, so neither a racing claimer nor a redelivered message
 *   can get its keys twice. A lost race (condition failed) just tries another candidate. Within a
 *   process, one bundle claim per key type is under way at a time; concurrent claims wait for it.
 * - The counter ('#' sorts before digits, so it never matches the key condition) is maintained with ADD
 *   on add/claim/expiry removal: availability per type is N GetItems, never a scan.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { AddKeysResult, KeyPoolStore, KeyType, PoolKey } from '../../../core/src';
import { shardVisitOrder, shuffle } from '../../../core/src';
import { errorCode } from '../../../core/src';

export interface KeyPoolRepositoryOptions {
  readonly tableName: string;
  /** Shards per key type; must stay the same for the table's lifetime (or only grow: see docs/key-pool.md). */
  readonly shards: number;
  /** Candidates fetched per query; the unused ones are kept as hints for the next claims. */
  readonly candidates?: number;
  /** How long a cached candidate is trusted before it is dropped unused (ms). */
  readonly candidateTtlMs?: number;
  /** BatchWriteItem rounds for unprocessed items before giving up on them. */
  readonly maxWriteAttempts?: number;
  /**
   * Claims' counter decrements are summed per shard and written once the oldest is this old (ms), checked
   * on every claim and by an unref'd timer; 0 writes one decrement per claim. Default 1000.
   */
  readonly counterFlushMs?: number;
  /** Keys per stored item (1..100, default 1); claims work with whatever size was stored. */
  readonly bundleSize?: number;
  readonly random?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

const COUNTER_SK = '#COUNT';
const BATCH_LIMIT = 25;
/** 100 RSA-4096 keys (about 3 KB each wrapped, with the public key) stay well under the 400 KB item limit. */
export const MAX_BUNDLE_SIZE = 100;

interface BundledKey {
  keyId: string;
  wrappedKey: Uint8Array;
  publicKeySpki: Uint8Array;
  createdAt: number;
  expiresAt: number;
}

interface BundleItem {
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

interface Candidate {
  pk: string;
  sk: string;
}

interface Hint extends Candidate {
  cachedAt: number;
  taken: boolean;
}

export function shardPk(keyType: KeyType, shard: number): string {
  return `KEY#${keyType}#${shard}`;
}

/** Sort key: expiry first (10-digit epoch seconds sort lexicographically), then the first key's id for uniqueness. */
export function keySk(expiresAt: number, keyId: string): string {
  return `${expiryPrefix(expiresAt)}#${keyId}`;
}

function expiryPrefix(epochSeconds: number): string {
  return String(Math.max(0, Math.floor(epochSeconds))).padStart(10, '0');
}

export class KeyPoolRepository implements KeyPoolStore {
  private readonly candidates: number;
  private readonly cacheTtlMs: number;
  /** Per-process candidate hints (key coordinates only), shared by this process's concurrent claims. */
  private readonly candidateCache = new Map<KeyType, Map<string, Hint>>();
  private readonly maxWriteAttempts: number;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** Round-robin shard for added keys, from a random start per process. */
  private nextShard: number;
  private readonly counterFlushMs: number;
  /** Claims not yet subtracted from the shard counters, per shard pk. */
  private claimedSinceFlush = new Map<string, number>();
  private claimedOldestAt: number | undefined;
  private counterTimer: NodeJS.Timeout | undefined;
  /** Counter writes of flushes under way: a flush or a count waits for them, so none reads a stale counter. */
  private readonly counterWrites = new Set<Promise<void>>();
  private readonly bundleSize: number;
  /** Keys of claimed bundles not handed out yet, per type, oldest first. */
  private readonly held = new Map<KeyType, PoolKey[]>();
  /** The bundle claim under way per type (resolves true when it took a bundle). */
  private readonly bundleClaims = new Map<KeyType, Promise<boolean>>();

  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: KeyPoolRepositoryOptions,
  ) {
    this.candidates = options.candidates ?? 10;
    this.cacheTtlMs = options.candidateTtlMs ?? 5_000;
    this.maxWriteAttempts = options.maxWriteAttempts ?? 8;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.nextShard = Math.floor(this.random() * options.shards);
    this.counterFlushMs = options.counterFlushMs ?? 1000;
    this.bundleSize = options.bundleSize ?? 1;
    if (!Number.isInteger(this.bundleSize) || this.bundleSize < 1 || this.bundleSize > MAX_BUNDLE_SIZE)
      throw new RangeError(`bundleSize must be an integer in 1..${MAX_BUNDLE_SIZE}`);
  }

  public async add(keys: readonly PoolKey[]): Promise<AddKeysResult> {
    const items = this.toBundles(keys);
    const writtenKeyIds: string[] = [];
    let written = 0;
    for (let i = 0; i < items.length; i += BATCH_LIMIT) {
      const chunk = items.slice(i, i + BATCH_LIMIT);
      let left: BundleItem[];
      try {
        left = await this.batchPut(chunk);
      } catch (err) {
        // Stop at a hard failure; what was written stays written (and counted).
        return { written, unwritten: keys.length - written, errorCode: errorCode(err), writtenKeyIds };
      }
      const leftKeys = new Set(left.map((item) => item.sk));
      const done = chunk.filter((item) => !leftKeys.has(item.sk));
      for (const item of done) {
        written += item.keyCount;
        writtenKeyIds.push(...item.keys.map((key) => key.keyId));
      }
      await this.adjustCounters(done, +1);
    }
    return { written, unwritten: keys.length - written, writtenKeyIds };
  }

  public async claim(keyType: KeyType, nowSeconds: number): Promise<PoolKey | undefined> {
    for (;;) {
      const held = this.takeHeld(keyType, nowSeconds);
      if (held) return held;
      // One bundle claim per type at a time: concurrent claims share its keys instead of each taking a
      // bundle of their own.
      let claiming = this.bundleClaims.get(keyType);
      if (!claiming) {
        claiming = this.claimBundle(keyType, nowSeconds).finally(() => this.bundleClaims.delete(keyType));
        this.bundleClaims.set(keyType, claiming);
      }
      if (!(await claiming)) return this.takeHeld(keyType, nowSeconds);
    }
  }

  /** Keys of this type this process claimed and has not handed out yet (unexpired or not). */
  public heldKeys(keyType: KeyType): number {
    return this.held.get(keyType)?.length ?? 0;
  }

  /** The oldest held key still usable at nowSeconds; expired ones are dropped (they were never served). */
  private takeHeld(keyType: KeyType, nowSeconds: number): PoolKey | undefined {
    const held = this.held.get(keyType);
    for (let key = held?.shift(); key; key = held?.shift()) if (key.expiresAt > nowSeconds) return key;
    return undefined;
  }

  /** Claims one bundle of the type and holds its keys; false when no unexpired bundle was left. */
  private async claimBundle(keyType: KeyType, nowSeconds: number): Promise<boolean> {
    // Candidates an earlier query found first: usually one round trip (the delete) per bundle.
    if (await this.claimCached(keyType, nowSeconds)) return true;
    for (const shard of shardVisitOrder(this.options.shards, this.random)) {
      const pk = shardPk(keyType, shard);
      // Each lost race means another claimer consumed a key, so this loop ends once the shard is empty.
      for (;;) {
        const out = await this.doc.send(
          new QueryCommand({
            TableName: this.options.tableName,
            KeyConditionExpression: 'pk = :pk AND sk > :now',
            ExpressionAttributeValues: { ':pk': pk, ':now': `${expiryPrefix(nowSeconds)}#~` },
            ProjectionExpression: 'pk, sk',
            ConsistentRead: true,
            Limit: this.candidates,
          }),
        );
        const found = (out.Items ?? []) as Candidate[];
        if (found.length === 0) break;
        this.remember(keyType, found);
        if (await this.claimCached(keyType, nowSeconds)) return true;
      }
    }
    return false;
  }

  public async available(keyTypes: readonly KeyType[]): Promise<Record<KeyType, number>> {
    const result = {} as Record<KeyType, number>;
    // This process's own claims not yet written count as gone (and writes under way are waited for).
    await Promise.all([...this.counterWrites]);
    const unflushed = new Map(this.claimedSinceFlush);
    const keys = keyTypes.flatMap((keyType) =>
      Array.from({ length: this.options.shards }, (_, shard) => ({
        pk: shardPk(keyType, shard),
        sk: COUNTER_SK,
      })),
    );
    for (const keyType of keyTypes) result[keyType] = 0;
    for (let i = 0; i < keys.length; i += 100) {
      let request: Record<string, unknown>[] = keys.slice(i, i + 100);
      for (let attempt = 0; request.length > 0; attempt++) {
        const out = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.options.tableName]: { Keys: request, ConsistentRead: true } },
          }),
        );
        for (const item of out.Responses?.[this.options.tableName] ?? []) {
          const keyType = String(item.pk).split('#')[1] as KeyType;
          const own = unflushed.get(String(item.pk)) ?? 0;
          // A shard counter can read below zero for a moment (claims in flight): count it as empty.
          result[keyType] += Math.max(0, Number(item.available ?? 0) - own);
        }
        request = out.UnprocessedKeys?.[this.options.tableName]?.Keys ?? [];
        if (request.length > 0) await this.backoff(attempt);
      }
    }
    return result;
  }

  public async removeExpired(
    keyType: KeyType,
    nowSeconds: number,
    onRemoved?: (keyId: string) => void,
  ): Promise<number> {
    let removed = 0;
    for (let shard = 0; shard < this.options.shards; shard++) {
      const pk = shardPk(keyType, shard);
      let startKey: Record<string, unknown> | undefined;
      let removedHere = 0;
      do {
        // '0' bounds the range below the counter item ('#' < '0').
        const out = await this.doc.send(
          new QueryCommand({
            TableName: this.options.tableName,
            KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
            ExpressionAttributeValues: { ':pk': pk, ':low': '0', ':high': `${expiryPrefix(nowSeconds)}#~` },
            ProjectionExpression: 'pk, sk',
            ExclusiveStartKey: startKey,
          }),
        );
        for (const item of out.Items ?? []) {
          // Conditional, so a bundle claimed (or TTL-deleted) meanwhile is not counted twice.
          const deleted = await this.deleteIfPresent(item.pk as string, item.sk as string);
          for (const key of deleted?.keys ?? []) {
            removedHere++;
            onRemoved?.(key.keyId);
          }
        }
        startKey = out.LastEvaluatedKey;
      } while (startKey);
      if (removedHere > 0) await this.addToCounter(pk, -removedHere);
      removed += removedHere;
    }
    return removed;
  }

  /**
   * Rewrites the counters of a type from the items themselves (a paginated COUNT query per shard): the
   * repair for drift, since DynamoDB's own TTL deletions never decrement a counter. Maintenance only, never
   * on the hot path; claims racing with it can leave a counter off by the claims in flight. Returns the
   * unexpired keys counted.
   */
  public async recount(keyType: KeyType, nowSeconds: number): Promise<number> {
    let total = 0;
    for (let shard = 0; shard < this.options.shards; shard++) {
      const pk = shardPk(keyType, shard);
      let count = 0;
      let startKey: Record<string, unknown> | undefined;
      do {
        const out = await this.doc.send(
          new QueryCommand({
            TableName: this.options.tableName,
            KeyConditionExpression: 'pk = :pk AND sk > :now',
            ExpressionAttributeValues: { ':pk': pk, ':now': `${expiryPrefix(nowSeconds)}#~` },
            ProjectionExpression: 'keyCount',
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
        );
        for (const item of out.Items ?? []) count += Number(item.keyCount ?? 0);
        startKey = out.LastEvaluatedKey;
      } while (startKey);
      await this.doc.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { pk, sk: COUNTER_SK },
          UpdateExpression: 'SET available = :n',
          ExpressionAttributeValues: { ':n': count },
        }),
      );
      total += count;
    }
    return total;
  }

  /** Deletes the candidate bundle if it is still there and unexpired, and holds its keys. */
  private async tryClaim(candidate: Candidate, keyType: KeyType, nowSeconds: number): Promise<boolean> {
    let deleted;
    try {
      deleted = await this.doc.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: { pk: candidate.pk, sk: candidate.sk },
          // Exists (nobody claimed it first) and unexpired (belt and braces next to the sort key).
          ConditionExpression: 'attribute_exists(pk) AND expiresAt > :now',
          ExpressionAttributeValues: { ':now': nowSeconds },
          ReturnValues: 'ALL_OLD',
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
    if (deleted.Attributes === undefined) return false;
    const bundle = deleted.Attributes as BundleItem;
    // Only a won claim touches the counter (a lost race costs no give-back write), and decrements are
    // summed per shard: one counter write per shard per flush instead of one per claim. The counter reads
    // high by at most one flush period of claims elsewhere; keygen's recount repairs what an environment
    // shut down with unflushed claims leaves behind.
    const held = this.held.get(keyType) ?? [];
    held.push(...fromBundle(bundle));
    this.held.set(keyType, held);
    await this.countClaim(candidate.pk, bundle.keys.length);
    return true;
  }

  private async countClaim(pk: string, keys: number): Promise<void> {
    this.claimedSinceFlush.set(pk, (this.claimedSinceFlush.get(pk) ?? 0) + keys);
    const now = Date.now();
    this.claimedOldestAt ??= now;
    // Checked here, inside the claiming invocation, because a frozen Lambda environment runs no timer.
    if (now - this.claimedOldestAt >= this.counterFlushMs) {
      await this.flushClaimCounters();
      return;
    }
    if (!this.counterTimer) {
      this.counterTimer = setTimeout(() => void this.flushClaimCounters(), this.counterFlushMs);
      this.counterTimer.unref();
    }
  }

  /** Writes the summed claim decrements; a failed write is kept for the next flush (never thrown at a claim). */
  public async flushClaimCounters(): Promise<void> {
    if (this.counterTimer) clearTimeout(this.counterTimer);
    this.counterTimer = undefined;
    const pending = this.claimedSinceFlush;
    this.claimedSinceFlush = new Map();
    this.claimedOldestAt = undefined;
    const write = Promise.all(
      [...pending].map(([pk, n]) =>
        this.addToCounter(pk, -n).catch(() => {
          this.claimedSinceFlush.set(pk, (this.claimedSinceFlush.get(pk) ?? 0) + n);
          this.claimedOldestAt ??= Date.now();
        }),
      ),
    ).then(() => undefined);
    this.counterWrites.add(write);
    void write.finally(() => this.counterWrites.delete(write));
    // Also a timer's flush still under way: when this resolves, every claim so far is written.
    await Promise.all([...this.counterWrites]);
  }

  /** Tries cached candidates until one is won (true) or none is left. */
  private async claimCached(keyType: KeyType, nowSeconds: number): Promise<boolean> {
    for (let c = this.takeCached(keyType); c; c = this.takeCached(keyType)) {
      if (await this.tryClaim(c, keyType, nowSeconds)) return true;
    }
    return false;
  }

  /** A fresh candidate no claim of this process has tried yet (it is marked taken at once). */
  private takeCached(keyType: KeyType): Candidate | undefined {
    const hints = this.candidateCache.get(keyType);
    if (!hints) return undefined;
    const now = Date.now();
    for (const [sk, hint] of hints) {
      if (now - hint.cachedAt > this.cacheTtlMs) hints.delete(sk);
      else if (!hint.taken) {
        hint.taken = true;
        return hint;
      }
    }
    return undefined;
  }

  /**
   * Adds query results as hints, shuffled so processes try them in different orders. A key already
   * known (even one taken by a concurrent claim here) is not added again: within one process, no two
   * claims ever race for the same key. Hints are only hints: a stale one costs one failed conditional
   * delete, never a second use of a key.
   */
  private remember(keyType: KeyType, found: readonly Candidate[]): void {
    const hints = this.candidateCache.get(keyType) ?? new Map<string, Hint>();
    const cachedAt = Date.now();
    for (const c of shuffle([...found], this.random)) {
      if (!hints.has(c.sk)) hints.set(c.sk, { pk: c.pk, sk: c.sk, cachedAt, taken: false });
    }
    this.candidateCache.set(keyType, hints);
  }

  /** The deleted bundle, or undefined when it was already gone. */
  private async deleteIfPresent(pk: string, sk: string): Promise<BundleItem | undefined> {
    try {
      const out = await this.doc.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: { pk, sk },
          ConditionExpression: 'attribute_exists(pk)',
          ReturnValues: 'ALL_OLD',
        }),
      );
      return out.Attributes as BundleItem | undefined;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return undefined;
      throw err;
    }
  }

  /** Writes up to 25 items, re-sending unprocessed ones with jittered backoff; returns those left over. */
  private async batchPut(items: BundleItem[]): Promise<BundleItem[]> {
    let pending = items;
    for (let attempt = 0; pending.length > 0 && attempt < this.maxWriteAttempts; attempt++) {
      if (attempt > 0) await this.backoff(attempt - 1);
      try {
        const out = await this.doc.send(
          new BatchWriteCommand({
            RequestItems: { [this.options.tableName]: pending.map((Item) => ({ PutRequest: { Item } })) },
          }),
        );
        const left = out.UnprocessedItems?.[this.options.tableName] ?? [];
        const leftSks = new Set(left.map((r) => String(r.PutRequest?.Item?.sk)));
        pending = pending.filter((item) => leftSks.has(item.sk));
      } catch (err) {
        // Throttling of the whole batch is retried like unprocessed items; anything else is fatal.
        if (!isThrottle(err)) throw err;
      }
    }
    return pending;
  }

  private async adjustCounters(items: readonly BundleItem[], sign: 1 | -1): Promise<void> {
    const perShard = new Map<string, number>();
    for (const item of items) perShard.set(item.pk, (perShard.get(item.pk) ?? 0) + sign * item.keyCount);
    await Promise.all([...perShard].map(([pk, n]) => this.addToCounter(pk, n)));
  }

  private async addToCounter(pk: string, delta: number): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: { pk, sk: COUNTER_SK },
        UpdateExpression: 'ADD available :d',
        ExpressionAttributeValues: { ':d': delta },
      }),
    );
  }

  private backoff(attempt: number): Promise<void> {
    // Full jitter, 25 ms doubling, capped at 2 s.
    const cap = Math.min(2000, 25 * 2 ** attempt);
    return this.sleep(Math.floor(this.random() * cap) + 1);
  }

  /** Bundles of up to bundleSize consecutive keys sharing type, wrapping key and profile; shards round-robin. */
  private toBundles(keys: readonly PoolKey[]): BundleItem[] {
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
        this.nextShard = (this.nextShard + 1) % this.options.shards;
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

function fromBundle(item: BundleItem): PoolKey[] {
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

function isThrottle(err: unknown): boolean {
  const name = (err as { name?: string }).name ?? '';
  return (
    name === 'ProvisionedThroughputExceededException' ||
    name === 'ThrottlingException' ||
    name === 'RequestLimitExceeded'
  );
}
