/**
 * Issued certificates in DynamoDB (TABLES.certificates, pk `pk`). Two items per certificate, written in
 * one transaction, each only if absent:
 *   REQ#<requestId>   the full record (one certificate per request; a retry reads it back)
 *   SERIAL#<hex>      serial -> request, validity, subject hash (audit and revocation; serials never repeat)
 * A concurrent second issuance for the same request loses the transaction and gets the winner's record.
 * A replacement (after a signer attempt died holding an unreleased certificate) rewrites REQ# only if it
 * still names the old serial, and marks the old SERIAL# item `supersededBy` the new serial.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { SerialCollisionError } from '../../../ca/src/errors';
import type {
  IssuedCertificateRecord,
  IssuedCertificateStore,
  RecordIssuedResult,
} from '../../../ca/src/types';

export interface CertificateRepositoryOptions {
  readonly tableName: string;
}

const requestKey = (requestId: string): string => `REQ#${requestId}`;
const serialKey = (serialHex: string): string => `SERIAL#${serialHex}`;

export class CertificateRepository implements IssuedCertificateStore {
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
      // The old serial stays on record, marked for revocation (a Put: the CA needs no UpdateItem).
      {
        Put: {
          TableName,
          Item: { ...serialItem(previous), supersededBy: certificate.serialHex },
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    );
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

function toRecord(item: Record<string, unknown>): IssuedCertificateRecord {
  const { pk: _pk, kind: _kind, ...record } = item;
  return record as unknown as IssuedCertificateRecord;
}
