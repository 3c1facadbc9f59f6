/**
 * The audit log in DynamoDB (table TABLES.audit, string keys pk/sk, no TTL: the log is append-only).
 *
 *   entry             pk = `CHAIN#<n>`        sk = sequence, 12 digits   chain, sequence, prevHash, event,
 *                                                                           timestamp, hash
 *   chain head        pk = `HEAD#<n>`         sk = `HEAD`                sequence, hash
 *   checkpoint        pk = `CHECKPOINT`       sk = sequence, 12 digits   body (canonical JSON), signature, hash
 *   checkpoint head   pk = `CHECKPOINT#HEAD`  sk = `HEAD`                sequence, hash
 *
 * An append is one TransactWriteItems: the new entries (each only if absent) and the head, conditional
 * on the head still being where the appender read it. Two appenders on one chain cannot both win: the
 * loser's transaction is cancelled (ConditionalCheckFailed or TransactionConflict) and it re-reads.
 * Each chain is its own partition, so N chains take N times the write rate of one hot item.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import {
  AUDIT_CHECKPOINT_HEAD_PK as CHECKPOINT_HEAD_PK,
  AUDIT_CHECKPOINT_PK as CHECKPOINT_PK,
  AUDIT_HEAD_SK as HEAD_SK,
  auditEntryPk,
  auditHeadPk,
  auditSequenceSk,
  genesisHead,
  parseAuditItems,
  type AnchoredCheckpoint,
  type AuditEntry,
  type AuditStore,
  type CarriedAppendResult,
  type CarriedWrites,
  type ChainHead,
  type SignedCheckpoint,
  type StoredAuditLog,
} from '@pipeline/core/audit';
import { batchGetConsistent } from './batch-get';
import { conditionFailedByGroup, MAX_TRANSACTION_ITEMS, type TransactItem } from './transactions';

export interface AuditRepositoryOptions {
  readonly tableName: string;
}

/** Reasons DynamoDB gives when another writer got there first: a lost race, not a failure. */
const LOST_RACE = new Set(['ConditionalCheckFailed', 'TransactionConflict']);

export class AuditRepository implements AuditStore {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: AuditRepositoryOptions,
  ) {}

  public async readHead(chain: number): Promise<ChainHead> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: auditHeadPk(chain), sk: HEAD_SK },
        ConsistentRead: true,
      }),
    );
    return Item ? { chain, sequence: Number(Item.sequence), hash: String(Item.hash) } : genesisHead(chain);
  }

  public async readHeads(chains: number): Promise<ChainHead[]> {
    const heads = new Map<number, ChainHead>();
    const keys = Array.from({ length: chains }, (_, chain) => ({ pk: auditHeadPk(chain), sk: HEAD_SK }));
    for (const item of await batchGetConsistent(this.doc, this.options.tableName, keys)) {
      const chain = Number(String(item.pk).slice('HEAD#'.length));
      heads.set(chain, { chain, sequence: Number(item.sequence), hash: String(item.hash) });
    }
    return Array.from({ length: chains }, (_, c) => heads.get(c) ?? genesisHead(c));
  }

  public async appendEntries(expected: ChainHead, entries: readonly AuditEntry[]): Promise<boolean> {
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: this.appendItems(expected, entries) }));
      return true;
    } catch (err) {
      if (isLostRace(err)) return false;
      throw err;
    }
  }

  /**
   * The entries and the head, then the carried writes (DynamoDB transaction items, in groups), in one
   * TransactWriteItems: at most 100 items in all. A carried condition that failed refuses the groups it
   * names; a lost race on the head (or a conflicting transaction anywhere) is `head-moved`, to try again.
   */
  public async appendEntriesCarrying(
    expected: ChainHead,
    entries: readonly AuditEntry[],
    carried: CarriedWrites,
  ): Promise<CarriedAppendResult> {
    const own = this.appendItems(expected, entries);
    const items = [...own, ...(carried.flat() as TransactItem[])];
    if (items.length > MAX_TRANSACTION_ITEMS) {
      throw new RangeError(`${items.length} items exceed one transaction (${MAX_TRANSACTION_ITEMS})`);
    }
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return { outcome: 'written' };
    } catch (err) {
      const reasons = err instanceof TransactionCanceledException ? err.CancellationReasons : undefined;
      if (reasons && reasons.length === items.length) {
        const refused = conditionFailedByGroup(
          reasons,
          carried.map((group) => group.length),
          own.length,
        );
        if (refused.some(Boolean)) return { outcome: 'refused', refused };
      }
      if (isLostRace(err)) return { outcome: 'head-moved' };
      throw err;
    }
  }

  private appendItems(expected: ChainHead, entries: readonly AuditEntry[]): TransactItem[] {
    const last = entries[entries.length - 1];
    const TableName = this.options.tableName;
    return [
      ...entries.map((e) => ({
        Put: {
          TableName,
          Item: {
            pk: auditEntryPk(e.chain),
            sk: auditSequenceSk(e.sequence),
            chain: e.chain,
            sequence: e.sequence,
            prevHash: e.prevHash,
            events: e.events,
            timestamp: e.timestamp,
            hash: e.hash,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      })),
      {
        Put: {
          TableName,
          Item: {
            pk: auditHeadPk(expected.chain),
            sk: HEAD_SK,
            sequence: last.sequence,
            hash: last.hash,
          },
          ...headCondition(expected.sequence, expected.hash),
        },
      },
    ];
  }

  public async readEntryHash(chain: number, sequence: number): Promise<string | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: auditEntryPk(chain), sk: auditSequenceSk(sequence) },
        ProjectionExpression: '#hash',
        ExpressionAttributeNames: { '#hash': 'hash' },
        ConsistentRead: true,
      }),
    );
    return typeof Item?.hash === 'string' ? Item.hash : undefined;
  }

  /**
   * A chain's entries written since `since` (epoch ms): read newest first, a page at a time, up to the
   * first entry whose timestamp is before it. For the CA's look for a signature before it replaces a
   * certificate (rare: a takeover), never for appends.
   */
  public async readEntriesSince(chain: number, since: number): Promise<AuditEntry[]> {
    const entries: AuditEntry[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': auditEntryPk(chain) },
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: 100,
          ExclusiveStartKey,
        }),
      );
      for (const item of page.Items ?? []) {
        const timestamp = typeof item.timestamp === 'number' ? item.timestamp : 0;
        if (timestamp < since) return entries;
        entries.push({
          chain,
          sequence: Number(item.sequence),
          prevHash: String(item.prevHash),
          events: Array.isArray(item.events) ? item.events.map(String) : [],
          timestamp,
          hash: String(item.hash),
        });
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return entries;
  }

  public async readCheckpointHead(): Promise<{ sequence: number; hash: string } | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: CHECKPOINT_HEAD_PK, sk: HEAD_SK },
        ConsistentRead: true,
      }),
    );
    return Item ? { sequence: Number(Item.sequence), hash: String(Item.hash) } : undefined;
  }

  public async putCheckpoint(checkpoint: SignedCheckpoint, canonicalBody: string): Promise<boolean> {
    const { sequence, prevHash } = checkpoint.body;
    const TableName = this.options.tableName;
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName,
                Item: {
                  pk: CHECKPOINT_PK,
                  sk: auditSequenceSk(sequence),
                  body: canonicalBody,
                  signature: checkpoint.signature,
                  hash: checkpoint.hash,
                },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            {
              Put: {
                TableName,
                Item: { pk: CHECKPOINT_HEAD_PK, sk: HEAD_SK, sequence, hash: checkpoint.hash },
                ...headCondition(sequence - 1, prevHash),
              },
            },
          ],
        }),
      );
      return true;
    } catch (err) {
      if (isLostRace(err)) return false;
      throw err;
    }
  }

  public async readCheckpoint(sequence: number): Promise<AnchoredCheckpoint | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: CHECKPOINT_PK, sk: auditSequenceSk(sequence) },
        ConsistentRead: true,
      }),
    );
    if (!Item || typeof Item.body !== 'string' || !(Item.signature instanceof Uint8Array)) return undefined;
    return { sequence, body: Item.body, signature: Buffer.from(Item.signature), hash: String(Item.hash) };
  }

  /** Scans the whole table (strongly consistent): for the verifier, never on the request path. */
  public async readAll(): Promise<StoredAuditLog> {
    const items: Record<string, unknown>[] = [];
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new ScanCommand({ TableName: this.options.tableName, ConsistentRead: true, ExclusiveStartKey }),
      );
      items.push(...(page.Items ?? []));
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
    return parseAuditItems(items);
  }
}

/** The head moves only from where the writer read it (absent for sequence 0). */
function headCondition(
  sequence: number,
  hash: string,
): {
  ConditionExpression: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
} {
  if (sequence === 0) return { ConditionExpression: 'attribute_not_exists(pk)' };
  return {
    ConditionExpression: '#sequence = :sequence AND #hash = :hash',
    ExpressionAttributeNames: { '#sequence': 'sequence', '#hash': 'hash' },
    ExpressionAttributeValues: { ':sequence': sequence, ':hash': hash },
  };
}

function isLostRace(err: unknown): boolean {
  if (!(err instanceof TransactionCanceledException)) {
    return (err as { name?: string })?.name === 'TransactionConflictException';
  }
  return (err.CancellationReasons ?? []).some((r) => r.Code !== undefined && LOST_RACE.has(r.Code));
}
