/**
 * The key pool in DynamoDB (table layout: key-pool/layout.ts).
 *
 * - A process claims a whole bundle and holds its other keys for its next claims (key-pool/held-keys.ts).
 * - "Any available key of type T" is one Query on a random shard: `pk = :p AND sk > :now`, strongly
 *   consistent, a few items, whose coordinates serve the next claims too (key-pool/candidate-cache.ts).
 * - Shards spread concurrent claimers over partitions; a claimer visits every shard before it calls the
 *   pool empty.
 * - A claim is a conditional DeleteItem with ReturnValues ALL_OLD: the bundle ceases to exist in the
 *   same atomic step that hands it to one process, so neither a racing claimer nor a redelivered message
 *   can get its keys twice. A lost race (condition failed) just tries another candidate. Within a
 *   process, one bundle claim per key type is under way at a time; concurrent claims wait for it.
 * - Per-shard counters give availability without a scan (key-pool/shard-counters.ts); the keygen removes
 *   expired bundles and recounts (key-pool/maintenance.ts).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DeleteCommand,
  QueryCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { backoffDelay, errorCode, sleep, type KeyType } from '@pipeline/core/shared';
import { shardVisitOrder, type AddKeysResult, type KeyPoolStore, type PoolKey } from '@pipeline/core/pool';
import { CandidateCache } from './key-pool/candidate-cache';
import { HeldKeys } from './key-pool/held-keys';
import {
  Bundler,
  expiryPrefix,
  fromBundle,
  shardPk,
  type BundleItem,
  type Candidate,
} from './key-pool/layout';
import { recount, removeExpired, type PoolTable } from './key-pool/maintenance';
import { ShardCounters } from './key-pool/shard-counters';

export { keySk, shardPk } from './key-pool/layout';

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

/** BatchWriteItem's limit. */
const BATCH_LIMIT = 25;
const WRITE_BACKOFF = { baseMs: 25, maxMs: 2000 };

export class KeyPoolRepository implements KeyPoolStore {
  private readonly candidates: number;
  private readonly cache: CandidateCache;
  private readonly held = new HeldKeys();
  private readonly counters: ShardCounters;
  private readonly bundler: Bundler;
  private readonly table: PoolTable;
  private readonly maxWriteAttempts: number;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** The bundle claim under way per type (resolves true when it took a bundle). */
  private readonly bundleClaims = new Map<KeyType, Promise<boolean>>();

  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: KeyPoolRepositoryOptions,
  ) {
    this.candidates = options.candidates ?? 10;
    this.maxWriteAttempts = options.maxWriteAttempts ?? 8;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? sleep;
    this.bundler = new Bundler(options.bundleSize ?? 1, options.shards, this.random);
    this.cache = new CandidateCache(options.candidateTtlMs ?? 5_000, this.random);
    this.counters = new ShardCounters(doc, options.tableName, options.counterFlushMs ?? 1000, {
      sleep: this.sleep,
      random: this.random,
    });
    this.table = { doc, tableName: options.tableName, shards: options.shards, counters: this.counters };
  }

  public async add(keys: readonly PoolKey[]): Promise<AddKeysResult> {
    const items = this.bundler.bundle(keys);
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
      await this.counters.adjust(done, +1);
    }
    return { written, unwritten: keys.length - written, writtenKeyIds };
  }

  public async claim(keyType: KeyType, nowSeconds: number): Promise<PoolKey | undefined> {
    for (;;) {
      const held = this.held.take(keyType, nowSeconds);
      if (held) return held;
      // One bundle claim per type at a time: concurrent claims share its keys instead of each taking a
      // bundle of their own.
      let claiming = this.bundleClaims.get(keyType);
      if (!claiming) {
        claiming = this.claimBundle(keyType, nowSeconds).finally(() => this.bundleClaims.delete(keyType));
        this.bundleClaims.set(keyType, claiming);
      }
      if (!(await claiming)) return this.held.take(keyType, nowSeconds);
    }
  }

  /** Keys of this type this process claimed and has not handed out yet (unexpired or not). */
  public heldKeys(keyType: KeyType): number {
    return this.held.count(keyType);
  }

  public available(keyTypes: readonly KeyType[]): Promise<Record<KeyType, number>> {
    return this.counters.read(keyTypes, this.options.shards);
  }

  public removeExpired(
    keyType: KeyType,
    nowSeconds: number,
    onRemoved?: (keyId: string) => void,
  ): Promise<number> {
    return removeExpired(this.table, keyType, nowSeconds, onRemoved);
  }

  /** Rewrites the type's counters from the items (maintenance; see key-pool/maintenance.ts). */
  public recount(keyType: KeyType, nowSeconds: number): Promise<number> {
    return recount(this.table, keyType, nowSeconds);
  }

  /** Writes the claims' summed counter decrements now. */
  public flushClaimCounters(): Promise<void> {
    return this.counters.flush();
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
        this.cache.remember(keyType, found);
        if (await this.claimCached(keyType, nowSeconds)) return true;
      }
    }
    return false;
  }

  /** Tries cached candidates until one is won (true) or none is left. */
  private async claimCached(keyType: KeyType, nowSeconds: number): Promise<boolean> {
    for (let c = this.cache.take(keyType); c; c = this.cache.take(keyType)) {
      if (await this.tryClaim(c, keyType, nowSeconds)) return true;
    }
    return false;
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
    // Only a won claim touches the counter (a lost race costs no give-back write).
    this.held.hold(keyType, fromBundle(bundle));
    await this.counters.countClaim(candidate.pk, bundle.keys.length);
    return true;
  }

  /** Writes up to 25 items, re-sending unprocessed ones with jittered backoff; returns those left over. */
  private async batchPut(items: BundleItem[]): Promise<BundleItem[]> {
    let pending = items;
    for (let attempt = 0; pending.length > 0 && attempt < this.maxWriteAttempts; attempt++) {
      if (attempt > 0) await this.sleep(backoffDelay(attempt, WRITE_BACKOFF, this.random));
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
}

function isThrottle(err: unknown): boolean {
  const name = (err as { name?: string }).name ?? '';
  return (
    name === 'ProvisionedThroughputExceededException' ||
    name === 'ThrottlingException' ||
    name === 'RequestLimitExceeded'
  );
}
