/**
 * The key pool in DynamoDB.
 *
 * Table layout (one table, pk/sk strings, TTL attribute `expiresAt`):
 *   key item      pk = `KEY#<keyType>#<shard>`   sk = `<expiresAt, 10 digits>#<keyId>`
 *   shard counter pk = `KEY#<keyType>#<shard>`   sk = `#COUNT`   available = N
 *
 * - "Any available key of type T" is one Query on a random shard: `pk = :p AND sk > :now`, strongly
 *   consistent, a few items. Ordering by expiry makes the query skip expired keys in the key condition
 *   itself (TTL deletion lags by up to days) and hands out the oldest keys first.
 * - Shards spread concurrent claimers over partitions; a claimer visits every shard before it calls the
 *   pool empty.
 * - A claim is a conditional DeleteItem with ReturnValues ALL_OLD: the wrapped key ceases to exist in the
 *   same atomic step that hands it out, so neither a racing claimer nor a redelivered message can get
 *   it twice. A lost race (condition failed) just tries another candidate.
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
  readonly random?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

const COUNTER_SK = '#COUNT';
const BATCH_LIMIT = 25;

interface KeyItem {
  pk: string;
  sk: string;
  keyId: string;
  keyType: KeyType;
  shard: number;
  wrappedKey: Uint8Array;
  publicKeySpki: Uint8Array;
  wrapKeyLabel: string;
  hsmProfile: string;
  createdAt: number;
  expiresAt: number;
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

/** Sort key: expiry first (10-digit epoch seconds sort lexicographically), then the id for uniqueness. */
export function keySk(expiresAt: number, keyId: string): string {
  return `${expiryPrefix(expiresAt)}#${keyId}`;
}

/** The key id in a key item's sort key (inverse of keySk). */
export function keyIdOfSk(sk: string): string {
  return sk.slice(sk.indexOf('#') + 1);
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
  }

  public async add(keys: readonly PoolKey[]): Promise<AddKeysResult> {
    const items = keys.map((key) => this.toItem(key));
    const writtenKeyIds: string[] = [];
    let written = 0;
    for (let i = 0; i < items.length; i += BATCH_LIMIT) {
      const chunk = items.slice(i, i + BATCH_LIMIT);
      let left: KeyItem[];
      try {
        left = await this.batchPut(chunk);
      } catch (err) {
        // Stop at a hard failure; what was written stays written (and counted).
        return { written, unwritten: items.length - written, errorCode: errorCode(err), writtenKeyIds };
      }
      const leftKeys = new Set(left.map((item) => item.sk));
      const done = chunk.filter((item) => !leftKeys.has(item.sk));
      written += done.length;
      writtenKeyIds.push(...done.map((item) => item.keyId));
      await this.adjustCounters(done, +1);
    }
    return { written, unwritten: items.length - written, writtenKeyIds };
  }

  public async claim(keyType: KeyType, nowSeconds: number): Promise<PoolKey | undefined> {
    // Candidates an earlier query found first: usually one round trip (the delete) per claim.
    const fromCache = await this.claimCached(keyType, nowSeconds);
    if (fromCache) return fromCache;
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
        const claimed = await this.claimCached(keyType, nowSeconds);
        if (claimed) return claimed;
      }
    }
    return undefined;
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
          // Conditional, so a key claimed (or TTL-deleted) meanwhile is not counted twice.
          const deleted = await this.deleteIfPresent(item.pk as string, item.sk as string);
          if (deleted) {
            removedHere++;
            onRemoved?.(keyIdOfSk(item.sk as string));
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
            Select: 'COUNT',
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
        );
        count += out.Count ?? 0;
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

  private async tryClaim(candidate: Candidate, nowSeconds: number): Promise<PoolKey | undefined> {
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
      if (err instanceof ConditionalCheckFailedException) return undefined;
      throw err;
    }
    if (deleted.Attributes === undefined) return undefined;
    // Only a won claim touches the counter (a lost race costs no give-back write), and decrements are
    // summed per shard: one counter write per shard per flush instead of one per claim. The counter reads
    // high by at most one flush period of claims elsewhere; keygen's recount repairs what an environment
    // shut down with unflushed claims leaves behind.
    await this.countClaim(candidate.pk);
    return fromItem(deleted.Attributes as KeyItem);
  }

  private async countClaim(pk: string): Promise<void> {
    this.claimedSinceFlush.set(pk, (this.claimedSinceFlush.get(pk) ?? 0) + 1);
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

  /** Tries cached candidates until one is won or none is left. */
  private async claimCached(keyType: KeyType, nowSeconds: number): Promise<PoolKey | undefined> {
    for (let c = this.takeCached(keyType); c; c = this.takeCached(keyType)) {
      const claimed = await this.tryClaim(c, nowSeconds);
      if (claimed) return claimed;
    }
    return undefined;
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

  private async deleteIfPresent(pk: string, sk: string): Promise<boolean> {
    try {
      const out = await this.doc.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: { pk, sk },
          ConditionExpression: 'attribute_exists(pk)',
          ReturnValues: 'ALL_OLD',
        }),
      );
      return out.Attributes !== undefined;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  /** Writes up to 25 items, re-sending unprocessed ones with jittered backoff; returns those left over. */
  private async batchPut(items: KeyItem[]): Promise<KeyItem[]> {
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

  private async adjustCounters(items: readonly KeyItem[], sign: 1 | -1): Promise<void> {
    const perShard = new Map<string, number>();
    for (const item of items) perShard.set(item.pk, (perShard.get(item.pk) ?? 0) + sign);
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

  private toItem(key: PoolKey): KeyItem {
    const shard = this.nextShard;
    this.nextShard = (this.nextShard + 1) % this.options.shards;
    return {
      pk: shardPk(key.keyType, shard),
      sk: keySk(key.expiresAt, key.keyId),
      keyId: key.keyId,
      keyType: key.keyType,
      shard,
      wrappedKey: key.wrappedKey,
      publicKeySpki: key.publicKeySpki,
      wrapKeyLabel: key.wrapKeyLabel,
      hsmProfile: key.hsmProfile,
      createdAt: key.createdAt,
      expiresAt: key.expiresAt,
    };
  }
}

function fromItem(item: KeyItem): PoolKey {
  return {
    keyId: item.keyId,
    keyType: item.keyType,
    wrappedKey: Buffer.from(item.wrappedKey),
    publicKeySpki: Buffer.from(item.publicKeySpki),
    wrapKeyLabel: item.wrapKeyLabel,
    hsmProfile: item.hsmProfile,
    createdAt: Number(item.createdAt),
    expiresAt: Number(item.expiresAt),
  };
}

function isThrottle(err: unknown): boolean {
  const name = (err as { name?: string }).name ?? '';
  return (
    name === 'ProvisionedThroughputExceededException' ||
    name === 'ThrottlingException' ||
    name === 'RequestLimitExceeded'
  );
}
