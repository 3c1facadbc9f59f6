/**
 * Sign request records in DynamoDB: one item per request (pk `id`), TTL `expiresAt` for retention.
 * Every state transition is one conditional UpdateItem that encodes the rule of request-state.ts, so a
 * redelivered or duplicated message can never move a request twice:
 *   start     received -> signing            if status = received
 *   takeover  signing  -> signing (new owner) if status = signing, attemptId = stale one, lease expired
 *   complete  signing  -> signed             if status = signing and attemptId = mine
 *   fail      signing  -> failed             if status = signing and attemptId = mine
 * Open records carry `openShard` (the sparse `open-requests` index); every terminal transition removes it.
 * With `batching`, the transitions concurrent work of this process asks for travel together: one
 * TransactWriteItems with each record's own condition (a record whose condition fails is answered
 * undefined and the others are written without it). A start goes alone (one UpdateItem returning the
 * record: one item operation, where a batch costs its write and a read of the record back); a complete
 * or fail of a record this repository started answers the record as the start returned it with the
 * transition's own changes, without reading it back; any other batched transition reads its records back
 * with one BatchGetItem.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { CoalescerOptions, KeyType } from '@pipeline/core/shared';
import type {
  DocumentResult,
  FailedResult,
  OpenRequestStore,
  RequestError,
  RequestStore,
  SignRequestRecord,
  SignRequestStore,
  SignedResult,
  StartAttempt,
  StoredSignRequest,
} from '@pipeline/core/signing';
import type { OpenRequestCounts } from '@pipeline/core/pool';
import { backoffDelay, Coalescer, PipelineError, sleep, type Settled } from '@pipeline/core/shared';
import { TABLES } from '@pipeline/resources';
import { batchGetConsistent } from './batch-get';
import { transactGroups } from './transactions';

/** Open requests counted at most (openCounts): beyond, the counts are a lower bound. */
const MAX_OPEN_COUNTED = 5000;

/** Partitions of the open-requests index: the first hex digit of the id (a UUID) modulo this. */
export const OPEN_SHARDS = 8;
const OPEN_INDEX = TABLES.requests.globalSecondaryIndexes[0].indexName;

export function openShardOf(id: string): string {
  return `OPEN#${parseInt(id.charAt(0), 16) % OPEN_SHARDS || 0}`;
}

/**
 * A one-time credential's creating request while it holds its wrapped key: in the same sparse index under
 * partitions of its own (`HELD#`), which the open requests' readers (reconciler, admission) never query.
 */
function heldShardOf(id: string): string {
  return `HELD#${parseInt(id.charAt(0), 16) % OPEN_SHARDS || 0}`;
}

export interface RequestRepositoryOptions {
  readonly tableName: string;
  /** Coalesce this process's concurrent transitions (the signer working on a batch). */
  readonly batching?: CoalescerOptions;
}

/** A conditional update of one record (the condition is ANDed with the record's existence). */
interface Transition {
  readonly id: string;
  readonly UpdateExpression: string;
  readonly ConditionExpression: string;
  readonly ExpressionAttributeValues: Record<string, unknown>;
  /**
   * The record after this transition, from the record the same attempt started (the condition names the
   * attempt, so nothing else of the attempt's record changed but what other transitions of no interest
   * here set: a requeue count): answered without a read when this process started it.
   */
  readonly after?: {
    readonly attemptId: string;
    readonly apply: (started: StoredSignRequest) => StoredSignRequest;
  };
}

/** Started records kept for their complete or fail at most (the oldest are forgotten: then read back). */
const MAX_STARTED_KEPT = 2000;

/** The record without the attributes a terminal transition removes. */
function ended(record: StoredSignRequest, changes: Record<string, unknown>): StoredSignRequest {
  const {
    leaseUntil: _lease,
    openShard: _shard,
    identityAssertion: _assertion,
    signMessage: _message,
    ...kept
  } = record as StoredSignRequest & { leaseUntil?: number; openShard?: string };
  return { ...kept, ...changes } as StoredSignRequest;
}

/**
 * The item of one document's result of a request with `documents` (pk `id`: never a request id, which is
 * a bare UUID): per attempt, so that only the results of the attempt that completed the request are read.
 */
export function documentResultId(requestId: string, attemptId: string, index: number): string {
  return `${requestId}#doc#${attemptId}#${index}`;
}

const BATCH_WRITE_LIMIT = 25;
const MAX_WRITE_ROUNDS = 8;

/** DynamoDB still left document results unwritten after every round. */
class BatchWriteIncompleteError extends PipelineError {
  public override readonly name = 'BatchWriteIncompleteError';
  public constructor(unprocessed: number) {
    super(`BatchWriteItem left ${unprocessed} items unprocessed`, 'BATCH_WRITE_INCOMPLETE');
  }
}

export class RequestRepository implements SignRequestStore, OpenRequestStore, RequestStore {
  private readonly transitions: Coalescer<Transition, StoredSignRequest | undefined> | undefined;
  /** Key type and client of open requests (admission's counts), which never change: read once each. */
  private readonly openAttributes = new Map<
    string,
    { keyType?: KeyType; clientId?: string; admissionWeight?: number }
  >();
  /** With batching: the records this process started, by id, until their attempt ends them. */
  private readonly started = new Map<string, StoredSignRequest>();

  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: RequestRepositoryOptions,
  ) {
    if (options.batching)
      this.transitions = new Coalescer((batch) => this.transitionMany(batch), options.batching);
  }

  /** Writes a new record unless its id is taken (nothing is overwritten): false when it was. */
  public async create(record: SignRequestRecord): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: { ...record, openShard: openShardOf(record.id) },
          ConditionExpression: 'attribute_not_exists(id)',
        }),
      );
      // Open now: admission's counts need not read what this process wrote (bounded until they prune it).
      if (this.openAttributes.size < 2 * MAX_OPEN_COUNTED)
        this.openAttributes.set(record.id, {
          keyType: record.keyType,
          clientId: record.clientId,
          admissionWeight: record.admissionWeight,
        });
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  /**
   * Strongly consistent: the signer and the CA decide on what is really stored. A signed request with
   * `documents` comes with its documents' results (documentResults, in input order), read from their
   * own items.
   */
  public async get(id: string): Promise<StoredSignRequest | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.options.tableName, Key: { id }, ConsistentRead: true }),
    );
    const record = out.Item as StoredSignRequest | undefined;
    return record && this.withDocumentResults(record);
  }

  /**
   * A signed request with `documents`: the record with the results its completing attempt stored, in
   * input order (all or none). Any other record as it is.
   */
  public async withDocumentResults(record: StoredSignRequest): Promise<StoredSignRequest> {
    const { documents, attemptId } = record;
    if (!documents || record.status !== 'signed' || attemptId === undefined) return record;
    const items = await batchGetConsistent(
      this.doc,
      this.options.tableName,
      documents.map((_, i) => ({ id: documentResultId(record.id, attemptId, i) })),
    );
    const byIndex = new Map(items.map((item) => [Number(item.index), item as unknown as DocumentResult]));
    if (byIndex.size !== documents.length) return record;
    const documentResults = documents.map((_, index) => {
      const { signature, cms, reachedLevel, validationData, toBeSignedBytes, adesObject } =
        byIndex.get(index)!;
      return { index, signature, cms, reachedLevel, validationData, toBeSignedBytes, adesObject };
    });
    return { ...record, documentResults };
  }

  /** Writes each document's result in an item of its own (before the request becomes `signed`). */
  private async putDocumentResults(
    id: string,
    attemptId: string,
    results: readonly DocumentResult[],
    expiresAt: number | undefined,
  ): Promise<void> {
    const items = results.map((r) => ({
      PutRequest: {
        Item: {
          ...r,
          id: documentResultId(id, attemptId, r.index),
          requestId: id,
          attemptId,
          ...(expiresAt === undefined ? {} : { expiresAt }),
        },
      },
    }));
    for (let i = 0; i < items.length; i += BATCH_WRITE_LIMIT) {
      let pending: typeof items | undefined = items.slice(i, i + BATCH_WRITE_LIMIT);
      for (let round = 0; pending && pending.length > 0; round++) {
        if (round >= MAX_WRITE_ROUNDS) throw new BatchWriteIncompleteError(pending.length);
        if (round > 0) await sleep(backoffDelay(round, { baseMs: 20, maxMs: 200 }));
        const out = await this.doc.send(
          new BatchWriteCommand({ RequestItems: { [this.options.tableName]: pending } }),
        );
        pending = out.UnprocessedItems?.[this.options.tableName] as typeof items | undefined;
      }
    }
  }

  /** Many records in one strongly consistent read (BatchGetItem; 100 per call). */
  public async getMany(ids: readonly string[]): Promise<Map<string, StoredSignRequest>> {
    const items = await batchGetConsistent(
      this.doc,
      this.options.tableName,
      [...new Set(ids)].map((id) => ({ id })),
    );
    return new Map(items.map((item) => [String(item.id), item as unknown as StoredSignRequest]));
  }

  /**
   * Removes a record that never reached the queue: only while it is still `received`, so a request a
   * signer already started can never be erased. A missing or started record is left as it is.
   */
  public async discard(id: string): Promise<void> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: { id },
          ConditionExpression: '#status = :received',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':received': 'received' },
        }),
      );
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
    }
  }

  public async startAttempt(id: string, attempt: StartAttempt): Promise<StoredSignRequest | undefined> {
    const values: Record<string, unknown> = {
      ':signing': 'signing',
      ':attempt': attempt.attemptId,
      ':started': attempt.startedAt,
      ':lease': attempt.leaseUntil,
      ':one': 1,
    };
    let condition: string;
    if (attempt.takeOverFrom) {
      values[':stale'] = attempt.takeOverFrom.attemptId ?? '';
      condition =
        '#status = :signing AND (attemptId = :stale OR attribute_not_exists(attemptId)) AND leaseUntil <= :started';
    } else {
      values[':received'] = 'received';
      condition = '#status = :received';
    }
    // Alone, not batched: the attempt needs the record, which UpdateItem returns and a transaction does not.
    const started = await this.transitionOne({
      id,
      UpdateExpression:
        'SET #status = :signing, attemptId = :attempt, startedAt = :started, leaseUntil = :lease ADD attempts :one',
      ConditionExpression: condition,
      ExpressionAttributeValues: values,
    });
    if (started && this.transitions) this.keepStarted(started);
    return started;
  }

  public async complete(
    id: string,
    attemptId: string,
    result: SignedResult,
  ): Promise<StoredSignRequest | undefined> {
    if (result.documentResults) {
      await this.putDocumentResults(id, attemptId, result.documentResults, result.resultsExpireAt);
    }
    // The raw signature or the container, whichever the request's format produced (none for documents).
    const output =
      result.documentResults !== undefined
        ? 'documentCount = :sig'
        : result.reservedKey !== undefined
          ? 'reservedKey = :sig'
          : result.cms === undefined
            ? 'signature = :sig'
            : 'cms = :sig';
    const level = result.reachedLevel ? ', reachedLevel = :level' : '';
    const validation = result.validationData ? ', validationData = :validation' : '';
    return this.transition(id, {
      UpdateExpression:
        `SET #status = :signed, ${output}, certificate = :cert, certificateSerial = :serial, chain = :chain, ` +
        'pooledKey = :pooled, keyAcquiredAt = :acquired, finishedAt = :finished, stageMs = :stages, ' +
        `discardedKeys = :discarded${result.receipt ? ', receipt = :receipt' : ''}${level}${validation}` +
        // A created credential stays listed (HELD#) while it holds its key, for its retirement if unused.
        (result.reservedKey
          ? ', openShard = :held REMOVE leaseUntil, identityAssertion, signMessage'
          : ' REMOVE leaseUntil, openShard, identityAssertion, signMessage'),
      ConditionExpression: '#status = :signing AND attemptId = :attempt',
      ExpressionAttributeValues: {
        ':signed': 'signed',
        ':signing': 'signing',
        ':attempt': attemptId,
        ':sig': result.documentResults?.length ?? result.reservedKey ?? result.cms ?? result.signature,
        ':cert': result.certificate,
        ':serial': result.certificateSerial,
        ':chain': result.chain,
        ':pooled': result.pooledKey,
        ':acquired': result.keyAcquiredAt,
        ':finished': result.finishedAt,
        ':stages': result.stageMs,
        ':discarded': result.discardedKeys,
        ...(result.receipt ? { ':receipt': result.receipt } : {}),
        ...(result.reachedLevel ? { ':level': result.reachedLevel } : {}),
        ...(result.validationData ? { ':validation': result.validationData } : {}),
        ...(result.reservedKey ? { ':held': heldShardOf(id) } : {}),
      },
      after: {
        attemptId,
        apply: (started) =>
          ended(started, {
            status: 'signed',
            ...(result.reservedKey
              ? { reservedKey: result.reservedKey }
              : { [result.cms === undefined ? 'signature' : 'cms']: result.cms ?? result.signature }),
            certificate: result.certificate,
            certificateSerial: result.certificateSerial,
            chain: result.chain,
            pooledKey: result.pooledKey,
            keyAcquiredAt: result.keyAcquiredAt,
            finishedAt: result.finishedAt,
            stageMs: result.stageMs,
            discardedKeys: result.discardedKeys,
            ...(result.receipt ? { receipt: result.receipt } : {}),
            ...(result.reachedLevel ? { reachedLevel: result.reachedLevel } : {}),
            ...(result.validationData ? { validationData: result.validationData } : {}),
          }),
      },
    });
  }

  /**
   * Removes a one-time credential's wrapped key from its creating request once a request signed with it
   * (its certificate released to that request only, by the CA): kept no longer than needed.
   */
  public async dropReservedKey(id: string, keyId: string): Promise<void> {
    await this.retireCredential(id, keyId);
  }

  /** Creating requests of one-time credentials still holding their key, received before `receivedBefore`. */
  public async listHeldCredentials(receivedBefore: number, limit: number): Promise<readonly string[]> {
    return this.listShards('HELD', receivedBefore, limit);
  }

  /** Removes a held credential's key (only if still `keyId`; undefined: none held) and its listing. */
  public async retireCredential(id: string, keyId: string | undefined): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { id },
          UpdateExpression: 'REMOVE reservedKey, openShard',
          ConditionExpression:
            keyId === undefined ? 'attribute_not_exists(reservedKey)' : 'reservedKey.keyId = :key',
          ...(keyId === undefined ? {} : { ExpressionAttributeValues: { ':key': keyId } }),
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  public async fail(
    id: string,
    attemptId: string,
    result: FailedResult,
  ): Promise<StoredSignRequest | undefined> {
    const sets = ['#status = :failed', '#error = :error', 'finishedAt = :finished'];
    const values: Record<string, unknown> = {
      ':failed': 'failed',
      ':signing': 'signing',
      ':attempt': attemptId,
      ':error': { code: result.error.code, message: result.error.message },
      ':finished': result.finishedAt,
    };
    if (result.pooledKey !== undefined) {
      sets.push('pooledKey = :pooled');
      values[':pooled'] = result.pooledKey;
    }
    if (result.keyAcquiredAt !== undefined) {
      sets.push('keyAcquiredAt = :acquired');
      values[':acquired'] = result.keyAcquiredAt;
    }
    if (result.stageMs !== undefined) {
      sets.push('stageMs = :stages');
      values[':stages'] = result.stageMs;
    }
    if (result.discardedKeys) {
      sets.push('discardedKeys = :discarded');
      values[':discarded'] = result.discardedKeys;
    }
    return this.transition(id, {
      UpdateExpression: `SET ${sets.join(', ')} REMOVE leaseUntil, openShard, identityAssertion, signMessage`,
      ConditionExpression: '#status = :signing AND attemptId = :attempt',
      ExpressionAttributeValues: values,
      after: {
        attemptId,
        apply: (started) =>
          ended(started, {
            status: 'failed',
            error: values[':error'],
            finishedAt: result.finishedAt,
            ...(result.pooledKey !== undefined ? { pooledKey: result.pooledKey } : {}),
            ...(result.keyAcquiredAt !== undefined ? { keyAcquiredAt: result.keyAcquiredAt } : {}),
            ...(result.stageMs !== undefined ? { stageMs: result.stageMs } : {}),
            ...(result.discardedKeys ? { discardedKeys: result.discardedKeys } : {}),
          }),
      },
    });
  }

  /**
   * Ends a request that its deliveries could not finish (the last SQS receive before the dead-letter
   * queue): `failed` with the reason, unless it is terminal already or an attempt still holds a live lease
   * (that attempt will finish it). Returns the record when this call failed it.
   */
  public async abandon(id: string, error: RequestError, now: number): Promise<StoredSignRequest | undefined> {
    return this.transition(id, {
      UpdateExpression:
        'SET #status = :failed, #error = :error, finishedAt = :now REMOVE leaseUntil, openShard, identityAssertion, signMessage',
      ConditionExpression:
        '(#status = :received OR (#status = :signing AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now)))',
      ExpressionAttributeValues: {
        ':failed': 'failed',
        ':received': 'received',
        ':signing': 'signing',
        ':error': { code: error.code, message: error.message },
        ':now': now,
      },
    });
  }

  /**
   * Ids of open requests received before `receivedBefore`, oldest first, at most `limit`: each shard of
   * the sparse index is read from its oldest item, and the shards' lists are merged.
   */
  public async listOpen(receivedBefore: number, limit: number): Promise<readonly string[]> {
    return this.listShards('OPEN', receivedBefore, limit);
  }

  /** The ids under the index's `<prefix>#n` partitions, oldest first across them, at most `limit`. */
  private async listShards(
    prefix: 'OPEN' | 'HELD',
    receivedBefore: number,
    limit: number,
  ): Promise<readonly string[]> {
    const shards = await Promise.all(
      Array.from({ length: OPEN_SHARDS }, (_, n) => this.queryShard(`${prefix}#${n}`, receivedBefore, limit)),
    );
    return shards
      .flat()
      .sort((a, b) => a.receivedAt - b.receivedAt)
      .slice(0, limit)
      .map((item) => item.id);
  }

  /**
   * Open requests (received or signing) per key type and per client, each counted by its admissionWeight
   * (absent: 1), for the API's admission: the sparse
   * index's ids (every shard), then the key type and client of the ids this process has not seen yet
   * (BatchGetItem, those attributes only: they never change, so each open request is read once per
   * process, and not at all for a request this process created). At most MAX_OPEN_COUNTED requests are
   * counted.
   */
  public async openCounts(): Promise<OpenRequestCounts> {
    const ids = await this.listOpen(Number.MAX_SAFE_INTEGER, MAX_OPEN_COUNTED);
    const unseen = ids.filter((id) => !this.openAttributes.has(id));
    const items = await batchGetConsistent(
      this.doc,
      this.options.tableName,
      unseen.map((id) => ({ id })),
      { projection: 'id, keyType, clientId, admissionWeight' },
    );
    for (const item of items as Array<{
      id: string;
      keyType?: KeyType;
      clientId?: string;
      admissionWeight?: number;
    }>)
      this.openAttributes.set(String(item.id), {
        keyType: item.keyType,
        clientId: item.clientId,
        admissionWeight: item.admissionWeight,
      });
    // Only the open ones are kept.
    const open = new Set(ids);
    for (const id of this.openAttributes.keys()) if (!open.has(id)) this.openAttributes.delete(id);
    const byType: Partial<Record<KeyType, number>> = {};
    const byClient: Partial<Record<KeyType, Record<string, number>>> = {};
    for (const id of ids) {
      const item = this.openAttributes.get(id);
      if (!item?.keyType) continue;
      const weight = item.admissionWeight ?? 1;
      byType[item.keyType] = (byType[item.keyType] ?? 0) + weight;
      const clients = (byClient[item.keyType] ??= {});
      const client = item.clientId ?? '';
      clients[client] = (clients[client] ?? 0) + weight;
    }
    return { byType, byClient };
  }

  /**
   * Gives up an attempt's lease at once (it found no key and hands its message back to the queue): the
   * next delivery takes the request over instead of waiting for the lease. Only the attempt that owns it.
   */
  public async release(id: string, attemptId: string, now: number): Promise<boolean> {
    this.started.delete(id);
    const stored = await this.transition(id, {
      UpdateExpression: 'SET leaseUntil = :now',
      ConditionExpression: '#status = :signing AND attemptId = :attempt',
      ExpressionAttributeValues: { ':signing': 'signing', ':attempt': attemptId, ':now': now },
    });
    return stored !== undefined;
  }

  public async getOpen(id: string): Promise<StoredSignRequest | undefined> {
    return this.get(id);
  }

  /** Counts one requeue, only while the request is open and its count is still the one read. */
  public async markRequeued(id: string, expectedRequeues: number, now: number): Promise<boolean> {
    const stored = await this.transition(id, {
      UpdateExpression: 'SET requeues = :next, requeuedAt = :now',
      ConditionExpression:
        '(#status = :received OR #status = :signing) AND ' +
        (expectedRequeues === 0 ? 'attribute_not_exists(requeues)' : 'requeues = :expected'),
      ExpressionAttributeValues: {
        ':received': 'received',
        ':signing': 'signing',
        ':next': expectedRequeues + 1,
        ':now': now,
        ...(expectedRequeues === 0 ? {} : { ':expected': expectedRequeues }),
      },
    });
    return stored !== undefined;
  }

  private async queryShard(
    shard: string,
    receivedBefore: number,
    limit: number,
  ): Promise<Array<{ id: string; receivedAt: number }>> {
    const items: Array<{ id: string; receivedAt: number }> = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.options.tableName,
          IndexName: OPEN_INDEX,
          KeyConditionExpression: 'openShard = :shard AND receivedAt < :before',
          ExpressionAttributeValues: { ':shard': shard, ':before': receivedBefore },
          Limit: limit - items.length,
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...((out.Items ?? []) as Array<{ id: string; receivedAt: number }>));
      startKey = out.LastEvaluatedKey;
    } while (startKey && items.length < limit);
    return items;
  }

  /** One conditional update returning the new record, or undefined when the condition did not hold. */
  private transition(id: string, update: Omit<Transition, 'id'>): Promise<StoredSignRequest | undefined> {
    const transition = { id, ...update };
    return this.transitions ? this.transitions.submit(transition) : this.transitionOne(transition);
  }

  private async transitionOne(transition: Transition): Promise<StoredSignRequest | undefined> {
    if (transition.after) this.started.delete(transition.id);
    try {
      const out = await this.doc.send(
        new UpdateCommand({ ...this.updateOf(transition), ReturnValues: 'ALL_NEW' }),
      );
      return out.Attributes as StoredSignRequest | undefined;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return undefined;
      throw err;
    }
  }

  /**
   * A batch of transitions: one transaction (a record appears in it once; a second transition of the same
   * record waits for the first) and one read of the records written.
   */
  private async transitionMany(
    batch: readonly Transition[],
  ): Promise<Settled<StoredSignRequest | undefined>[]> {
    const first = new Map<string, number>();
    batch.forEach((t, i) => first.set(t.id, first.get(t.id) ?? i));
    const unique = [...first.values()];
    const answers = new Array<Settled<StoredSignRequest | undefined>>(batch.length);
    if (unique.length === 1) {
      answers[unique[0]] = { ok: true, value: await this.transitionOne(batch[unique[0]]) };
    } else {
      const written = await transactGroups(
        this.doc,
        unique.map((i) => [{ Update: this.updateOf(batch[i]) }]),
      );
      // Records this process started are answered from the start with the transition's changes; only
      // the others are read back.
      const known = new Map<number, StoredSignRequest>();
      unique.forEach((i, n) => {
        const after = this.afterOf(batch[i]);
        if (written[n] && after) known.set(i, after);
      });
      for (const i of unique) if (batch[i].after) this.started.delete(batch[i].id);
      const toRead = unique.filter((i, n) => written[n] && !known.has(i)).map((i) => batch[i].id);
      const records = toRead.length > 0 ? await this.getMany(toRead) : new Map<string, StoredSignRequest>();
      unique.forEach((i, n) => {
        answers[i] = { ok: true, value: written[n] ? (known.get(i) ?? records.get(batch[i].id)) : undefined };
      });
    }
    for (let i = 0; i < batch.length; i++) {
      if (answers[i]) continue;
      try {
        answers[i] = { ok: true, value: await this.transitionOne(batch[i]) };
      } catch (error) {
        answers[i] = { ok: false, error };
      }
    }
    return answers;
  }

  /** The record after a transition of a record this process started, when it is known without a read. */
  private afterOf(transition: Transition): StoredSignRequest | undefined {
    const started = this.started.get(transition.id);
    if (!transition.after || !started || started.attemptId !== transition.after.attemptId) return undefined;
    return transition.after.apply(started);
  }

  private keepStarted(record: StoredSignRequest): void {
    this.started.delete(record.id);
    this.started.set(record.id, record);
    if (this.started.size > MAX_STARTED_KEPT) this.started.delete(this.started.keys().next().value!);
  }

  private updateOf(transition: Transition) {
    const { id, after: _after, ...update } = transition;
    const names: Record<string, string> = { '#status': 'status' };
    if (update.UpdateExpression.includes('#error')) names['#error'] = 'error';
    return {
      TableName: this.options.tableName,
      Key: { id },
      UpdateExpression: update.UpdateExpression,
      ConditionExpression: `attribute_exists(id) AND ${update.ConditionExpression}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: update.ExpressionAttributeValues,
    };
  }
}
