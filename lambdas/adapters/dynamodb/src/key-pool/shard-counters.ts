/**
 * The per-shard key counters: availability per type is one batch read of N counter items, never a scan.
 * Adds and expiry removals write their deltas at once; claims' decrements are summed per shard and written
 * once the oldest is `flushMs` old (checked on every claim and by an unref'd timer), so a claim costs no
 * counter write of its own. A counter reads high by at most one flush period of claims elsewhere; the
 * keygen's recount repairs what an environment shut down with unflushed claims leaves behind.
 */
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { KeyType } from '@pipeline/core/shared';
import { batchGetConsistent, type BatchGetDeps } from '../batch-get';
import { COUNTER_SK, shardPk, type BundleItem } from './layout';

export class ShardCounters {
  /** Claims not yet subtracted from the shard counters, per shard pk. */
  private claimedSinceFlush = new Map<string, number>();
  private claimedOldestAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Writes of flushes under way: a flush or a read waits for them, so none sees a stale counter. */
  private readonly writes = new Set<Promise<void>>();

  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** 0 writes one decrement per claim. */
    private readonly flushMs: number,
    private readonly deps: BatchGetDeps = {},
  ) {}

  /** Available keys per type: the counters less this process's claims not written yet. */
  public async read(keyTypes: readonly KeyType[], shards: number): Promise<Record<KeyType, number>> {
    const result = {} as Record<KeyType, number>;
    await Promise.all([...this.writes]);
    const unflushed = new Map(this.claimedSinceFlush);
    const keys = keyTypes.flatMap((keyType) =>
      Array.from({ length: shards }, (_, shard) => ({ pk: shardPk(keyType, shard), sk: COUNTER_SK })),
    );
    for (const keyType of keyTypes) result[keyType] = 0;
    for (const item of await batchGetConsistent(this.doc, this.tableName, keys, this.deps)) {
      const keyType = String(item.pk).split('#')[1] as KeyType;
      const own = unflushed.get(String(item.pk)) ?? 0;
      // A shard counter can read below zero for a moment (claims in flight): count it as empty.
      result[keyType] += Math.max(0, Number(item.available ?? 0) - own);
    }
    return result;
  }

  /** Counts written (+1) or removed (-1) bundles' keys, one write per shard. */
  public async adjust(items: readonly BundleItem[], sign: 1 | -1): Promise<void> {
    const perShard = new Map<string, number>();
    for (const item of items) perShard.set(item.pk, (perShard.get(item.pk) ?? 0) + sign * item.keyCount);
    await Promise.all([...perShard].map(([pk, n]) => this.add(pk, n)));
  }

  public async add(pk: string, delta: number): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk, sk: COUNTER_SK },
        UpdateExpression: 'ADD available :d',
        ExpressionAttributeValues: { ':d': delta },
      }),
    );
  }

  /** Overwrites a counter (the recount's repair). */
  public async set(pk: string, available: number): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk, sk: COUNTER_SK },
        UpdateExpression: 'SET available = :n',
        ExpressionAttributeValues: { ':n': available },
      }),
    );
  }

  /** Notes a won claim of `keys` keys from the shard; writes the sums when the oldest is due. */
  public async countClaim(pk: string, keys: number): Promise<void> {
    this.claimedSinceFlush.set(pk, (this.claimedSinceFlush.get(pk) ?? 0) + keys);
    const now = Date.now();
    this.claimedOldestAt ??= now;
    // Checked here, inside the claiming invocation, because a frozen Lambda environment runs no timer.
    if (now - this.claimedOldestAt >= this.flushMs) {
      await this.flush();
      return;
    }
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Writes the summed claim decrements; a failed write is kept for the next flush (never thrown at a claim). */
  public async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const pending = this.claimedSinceFlush;
    this.claimedSinceFlush = new Map();
    this.claimedOldestAt = undefined;
    const write = Promise.all(
      [...pending].map(([pk, n]) =>
        this.add(pk, -n).catch(() => {
          this.claimedSinceFlush.set(pk, (this.claimedSinceFlush.get(pk) ?? 0) + n);
          this.claimedOldestAt ??= Date.now();
        }),
      ),
    ).then(() => undefined);
    this.writes.add(write);
    void write.finally(() => this.writes.delete(write));
    // Also a timer's flush still under way: when this resolves, every claim so far is written.
    await Promise.all([...this.writes]);
  }
}
