/**
 * Issued certificates in DynamoDB (TABLES.certificates, pk `pk`). Two items per certificate, written in
 * one transaction, each only if absent:
 *   REQ#<requestId>   the full record (one certificate per request; a retry reads it back)
 *   SERIAL#<hex>      serial -> request, validity, subject hash (audit and revocation; serials never repeat)
 * A concurrent second issuance for the same request loses the transaction and gets the winner's record.
 * A replacement (after a signer attempt died holding an unreleased certificate) rewrites REQ# only if it
 * still names the old serial, and marks the old SERIAL# item `supersededBy` the new serial and revoked
 * (reason superseded) in the same transaction.
 * Revocation sets `revokedAt`, `revocationReason`, `revokedBy` and `revokedList` (the sparse
 * `revoked-certificates` index) on the SERIAL# item, once. `CRL#<issuer>` items count CRL numbers.
 */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  GetCommand,
  type BatchGetCommandOutput,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import {
  SerialCollisionError,
  type IssuedCertificateRecord,
  type IssuedCertificateStore,
  type RecordIssuedResult,
} from '../../../core/src';
import type {
  CertificateStatus,
  Revocation,
  RevocationStore,
  RevokeOutcome,
  RevokedEntry,
} from '../../../core/src';
import { TABLES } from '../../../resources/src';
import { batchGetConsistent } from './batch-get';
import { transactGroups } from './transactions';

export interface CertificateRepositoryOptions {
  readonly tableName: string;
}

const requestKey = (requestId: string): string => `REQ#${requestId}`;
const serialKey = (serialHex: string): string => `SERIAL#${serialHex}`;
/** The one partition of the revoked index: revocations are rare (takeovers, operator decisions). */
const REVOKED_LIST = 'REVOKED';
const REVOKED_INDEX = TABLES.certificates.globalSecondaryIndexes[0].indexName;

export class CertificateRepository implements IssuedCertificateStore, RevocationStore {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: CertificateRepositoryOptions,
  ) {}

  /** Strongly consistent: a retry must see an issuance that has just happened. */
  public async getByRequest(requestId: string): Promise<IssuedCertificateRecord | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: requestKey(requestId) },
        ConsistentRead: true,
      }),
    );
    return out.Item ? toRecord(out.Item) : undefined;
  }

  public async getManyByRequest(
    requestIds: readonly string[],
  ): Promise<Map<string, IssuedCertificateRecord>> {
    const items = await batchGetConsistent(
      this.doc,
      this.options.tableName,
      [...new Set(requestIds)].map((id) => ({ pk: requestKey(id) })),
    );
    return new Map(items.map((item) => [String(item.requestId), toRecord(item)]));
  }

  /** New certificates, each with its two items in one atomic group, many groups per transaction. */
  public async recordMany(certificates: readonly IssuedCertificateRecord[]): Promise<boolean[]> {
    const TableName = this.options.tableName;
    return transactGroups(
      this.doc,
      certificates.map((certificate) => [
        {
          Put: {
            TableName,
            Item: { pk: requestKey(certificate.requestId), kind: 'request', ...certificate },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        {
          Put: { TableName, Item: serialItem(certificate), ConditionExpression: 'attribute_not_exists(pk)' },
        },
      ]),
    );
  }

  /** The serial's audit item: which request a serial was issued for, and its validity. */
  public async getBySerial(serialHex: string): Promise<Record<string, unknown> | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: serialKey(serialHex) },
        ConsistentRead: true,
      }),
    );
    return out.Item;
  }

  public async record(certificate: IssuedCertificateRecord): Promise<RecordIssuedResult> {
    return this.write(certificate, {
      Put: {
        TableName: this.options.tableName,
        Item: { pk: requestKey(certificate.requestId), kind: 'request', ...certificate },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    });
  }

  public async replace(
    previous: IssuedCertificateRecord,
    certificate: IssuedCertificateRecord,
  ): Promise<RecordIssuedResult> {
    const TableName = this.options.tableName;
    const replaced = { ...certificate, supersedes: previous.serialHex };
    return this.write(
      replaced,
      {
        Put: {
          TableName,
          Item: { pk: requestKey(certificate.requestId), kind: 'request', ...replaced },
          ConditionExpression: 'serialHex = :previous',
          ExpressionAttributeValues: { ':previous': previous.serialHex },
        },
      },
      // The old serial stays on record, revoked as superseded (a Put: the CA needs no UpdateItem for it).
      {
        Put: {
          TableName,
          Item: {
            ...serialItem(previous),
            supersededBy: certificate.serialHex,
            ...revocationAttributes({
              revokedAt: certificate.issuedAt,
              reason: 'superseded',
              revokedBy: 'ca',
            }),
          },
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    );
  }

  public async statuses(serialHexes: readonly string[]): Promise<Map<string, CertificateStatus>> {
    const found = new Map<string, CertificateStatus>();
    const unique = [...new Set(serialHexes)];
    for (let i = 0; i < unique.length; i += 100) {
      let keys: Record<string, unknown>[] | undefined = unique
        .slice(i, i + 100)
        .map((s) => ({ pk: serialKey(s) }));
      // Unprocessed keys are asked again (BatchGetItem returns them under throttling).
      while (keys && keys.length > 0) {
        const out: BatchGetCommandOutput = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.options.tableName]: { Keys: keys, ConsistentRead: true } },
          }),
        );
        for (const item of out.Responses?.[this.options.tableName] ?? []) {
          const status = toStatus(item);
          found.set(status.serialHex, status);
        }
        keys = out.UnprocessedKeys?.[this.options.tableName]?.Keys;
      }
    }
    return found;
  }

  public async revoke(serialHex: string, revocation: Revocation): Promise<RevokeOutcome> {
    const attributes = revocationAttributes(revocation);
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { pk: serialKey(serialHex) },
          UpdateExpression:
            'SET revokedAt = :at, revocationReason = :reason, revokedBy = :by, revokedList = :list',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(revokedAt)',
          ExpressionAttributeValues: {
            ':at': attributes.revokedAt,
            ':reason': attributes.revocationReason,
            ':by': attributes.revokedBy,
            ':list': attributes.revokedList,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { outcome: 'revoked', status: toStatus(out.Attributes!) };
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      const existing = (await this.statuses([serialHex])).get(serialHex);
      return existing ? { outcome: 'already-revoked', status: existing } : { outcome: 'unknown' };
    }
  }

  public async revokedUnexpired(at: number): Promise<RevokedEntry[]> {
    const entries: RevokedEntry[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.options.tableName,
          IndexName: REVOKED_INDEX,
          KeyConditionExpression: 'revokedList = :list AND notAfter >= :at',
          ExpressionAttributeValues: { ':list': REVOKED_LIST, ':at': at },
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of out.Items ?? []) {
        const status = toStatus(item);
        if (status.revocation) {
          entries.push({
            serialHex: status.serialHex,
            revokedAt: new Date(status.revocation.revokedAt),
            reason: status.revocation.reason,
          });
        }
      }
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return entries;
  }

  public async nextCrlNumber(issuer: 'root' | 'issuing'): Promise<number> {
    const out = await this.doc.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: { pk: `CRL#${issuer}` },
        UpdateExpression: 'ADD crlNumber :one',
        ExpressionAttributeValues: { ':one': 1 },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes!.crlNumber);
  }

  /** The request item (given), the new serial item (only if absent), and any extra items, atomically. */
  private async write(
    certificate: IssuedCertificateRecord,
    requestItem: TransactItem,
    ...extra: TransactItem[]
  ): Promise<RecordIssuedResult> {
    const { requestId } = certificate;
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            requestItem,
            {
              Put: {
                TableName: this.options.tableName,
                Item: serialItem(certificate),
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            ...extra,
          ],
        }),
      );
      return { stored: true };
    } catch (err) {
      if (!(err instanceof TransactionCanceledException)) throw err;
      const [byRequest, bySerial] = (err.CancellationReasons ?? []).map((r) => r.Code);
      if (bySerial === 'ConditionalCheckFailed' && byRequest !== 'ConditionalCheckFailed') {
        throw new SerialCollisionError();
      }
      // Lost to another issuance (its condition, or a TransactionConflict with its write): theirs stands.
      const existing = await this.getByRequest(requestId);
      if (existing) return { stored: false, existing };
      throw err;
    }
  }
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The serial's audit item: serial -> request, subject hash, validity. */
function serialItem(certificate: IssuedCertificateRecord): Record<string, unknown> {
  const { serialHex, requestId, subjectHash, notBefore, notAfter, issuedAt } = certificate;
  return {
    pk: serialKey(serialHex),
    kind: 'serial',
    serialHex,
    requestId,
    subjectHash,
    notBefore,
    notAfter,
    issuedAt,
  };
}

function revocationAttributes(revocation: Revocation) {
  return {
    revokedAt: revocation.revokedAt,
    revocationReason: revocation.reason,
    revokedBy: revocation.revokedBy,
    revokedList: REVOKED_LIST,
  };
}

function toStatus(item: Record<string, unknown>): CertificateStatus {
  const revoked = typeof item.revokedAt === 'number';
  return {
    serialHex: item.serialHex as string,
    requestId: item.requestId as string,
    notAfter: item.notAfter as number,
    ...(revoked
      ? {
          revocation: {
            revokedAt: item.revokedAt as number,
            reason: item.revocationReason as Revocation['reason'],
            revokedBy: item.revokedBy as string,
          },
        }
      : {}),
  };
}

function toRecord(item: Record<string, unknown>): IssuedCertificateRecord {
  const { pk: _pk, kind: _kind, ...record } = item;
  return record as unknown as IssuedCertificateRecord;
}
