/**
 * Issued certificates in DynamoDB (TABLES.certificates, pk `pk`). Two items per certificate, written in
 * one transaction, each only if absent:
 *   REQ#<requestId>   the full record (one certificate per request; a retry reads it back)
 *   SERIAL#<hex>      serial -> request, validity, subject hash (audit and revocation; serials never repeat)
 * A concurrent second issuance for the same request loses the transaction and gets the winner's record.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
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
    const { serialHex, requestId, subjectHash, notBefore, notAfter, issuedAt } = certificate;
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.options.tableName,
                Item: { pk: requestKey(requestId), kind: 'request', ...certificate },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            {
              Put: {
                TableName: this.options.tableName,
                Item: {
                  pk: serialKey(serialHex),
                  kind: 'serial',
                  serialHex,
                  requestId,
                  subjectHash,
                  notBefore,
                  notAfter,
                  issuedAt,
                },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
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

function toRecord(item: Record<string, unknown>): IssuedCertificateRecord {
  const { pk: _pk, kind: _kind, ...record } = item;
  return record as unknown as IssuedCertificateRecord;
}
