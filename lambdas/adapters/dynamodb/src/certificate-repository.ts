/**
 * Issued certificates in DynamoDB (TABLES.certificates, pk `pk`). Per certificate, written in one
 * transaction, each only if absent:
 *   REQ#<requestId>          the full record (one certificate per request; a retry reads it back)
 *   SERIAL#<hex>             serial -> request, validity, subject hash (audit and revocation; never repeats)
 *   ASSERTION#<replay key>   the identity assertion certified for, its request and attempt (TTL: until the
 *                            CA would refuse the assertion as stale anyway)
 *   PUBKEY#<SHA-256 of SPKI> the public key certified, its request and serial (TTL: longer than any pool
 *                            key lives)
 * A concurrent second issuance for the same request loses the transaction and gets the winner's record; a
 * second use of an assertion (for another request) or of a public key loses on its register entry.
 *   OWNER#<requestId>        the API client the request id belongs to, registered by the revocation
 *                            function for the API before the request is stored (first client keeps it;
 *                            TTL: after its certificate would have expired)
 * REQ# is written with the signer attempt its certificate is released to (`attemptId`, `releasedAt`):
 * the request gets no other certificate after it but a takeover's replacement. A replacement
 * (`supersedes`, the earlier serial; `replacements`, its count) overwrites REQ# only if it still names the
 * earlier serial and the count stays within MAX_REPLACEMENTS, and revokes the earlier SERIAL# (reason `superseded`, by `ca`) only if it exists and is not revoked, in
 * the same transaction; the issuing CA updates no other item.
 * Revocation sets `revokedAt`, `revocationReason`, `revokedBy` and `revokedList` (the sparse
 * `revoked-certificates` index) on the SERIAL# item, once. `CRL#<issuer>` items count CRL numbers.
 */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import {
  SerialCollisionError,
  MAX_REPLACEMENTS,
  SUPERSEDED_BY_CA,
  type CertificateToRecord,
  type IssuanceLookup,
  type IssuanceState,
  type IssuedCertificateRecord,
  type IssuedCertificateStore,
  type RecordIssuedResult,
  type SerialState,
} from '@pipeline/core/pki';
import type {
  CertificateStatus,
  RequestCertificate,
  Revocation,
  RevocationStore,
  StoredRevokeOutcome,
  RevokedEntry,
} from '@pipeline/core/pki';
import type {
  CarryingAuditSink,
  LoggedActivation,
  LoggedCertificateStore,
  LoggedIssuance,
  LoggedIssuanceResult,
} from '@pipeline/core/audit';
import { TABLES } from '@pipeline/resources';
import { batchGetConsistent } from './batch-get';
import { MAX_TRANSACTION_ITEMS, transactGroups, type TransactItem } from './transactions';

export interface CertificateRepositoryOptions {
  readonly tableName: string;
}

const requestKey = (requestId: string): string => `REQ#${requestId}`;
const serialKey = (serialHex: string): string => `SERIAL#${serialHex}`;
const assertionKey = (replayKey: string): string => `ASSERTION#${replayKey}`;
const publicKeyKey = (publicKeyHash: string): string => `PUBKEY#${publicKeyHash}`;
const ownerKey = (requestId: string): string => `OWNER#${requestId}`;
/** The one partition of the revoked index: revocations are rare (client and operator decisions). */
const REVOKED_LIST = 'REVOKED';
const REVOKED_INDEX = TABLES.certificates.globalSecondaryIndexes[0].indexName;

/** Items of one issuance transaction, in this order (cancellation reasons are read by position). */
const REQUEST_ITEM = 0;
const SERIAL_ITEM = 1;
const ASSERTION_ITEM = 2;
const PUBLIC_KEY_ITEM = 3;
/** A replacement's fifth item: the revocation of the serial it supersedes. */
const PREVIOUS_SERIAL_ITEM = 4;

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

  /** The certificates of the requests and the register entries of their assertions and keys: one read. */
  public async lookup(items: readonly IssuanceLookup[]): Promise<IssuanceState[]> {
    const keys = new Set<string>();
    for (const item of items) {
      keys.add(requestKey(item.requestId));
      keys.add(assertionKey(item.assertionKey));
      keys.add(publicKeyKey(item.publicKeyHash));
    }
    const found = new Map(
      (
        await batchGetConsistent(
          this.doc,
          this.options.tableName,
          [...keys].map((pk) => ({ pk })),
        )
      ).map((item) => [String(item.pk), item]),
    );
    return items.map((item) => {
      const existing = found.get(requestKey(item.requestId));
      const assertion = found.get(assertionKey(item.assertionKey));
      const publicKey = found.get(publicKeyKey(item.publicKeyHash));
      return {
        ...(existing ? { existing: toRecord(existing) } : {}),
        ...(assertion
          ? {
              assertionUse: {
                requestId: String(assertion.requestId),
                ...(typeof assertion.attemptId === 'string' ? { attemptId: assertion.attemptId } : {}),
              },
            }
          : {}),
        ...(publicKey
          ? {
              publicKeyUse: {
                requestId: String(publicKey.requestId),
                serialHex: String(publicKey.serialHex),
              },
            }
          : {}),
      };
    });
  }

  /** New certificates, each with its four items in one atomic group, many groups per transaction. */
  public async recordMany(items: readonly CertificateToRecord[]): Promise<boolean[]> {
    return transactGroups(
      this.doc,
      items.map((item) => this.issuanceItems(item)),
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

  public async record(item: CertificateToRecord): Promise<RecordIssuedResult> {
    return this.write(item.certificate, this.issuanceItems(item));
  }

  public async serialState(serialHex: string): Promise<SerialState> {
    const item = await this.getBySerial(serialHex);
    if (!item) return 'unknown';
    return item.revokedAt === undefined ? 'valid' : 'revoked';
  }

  public async registerOwner(requestId: string, clientId: string, expiresAt: number): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: { pk: ownerKey(requestId), kind: 'owner', requestId, clientId, expiresAt },
          ConditionExpression: 'attribute_not_exists(pk) OR clientId = :client',
          ExpressionAttributeValues: { ':client': clientId },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  public async requestCertificate(requestId: string): Promise<RequestCertificate> {
    const items = await batchGetConsistent(this.doc, this.options.tableName, [
      { pk: requestKey(requestId) },
      { pk: ownerKey(requestId) },
    ]);
    const certificate = items.find((i) => i.pk === requestKey(requestId));
    const owner = items.find((i) => i.pk === ownerKey(requestId));
    return {
      ...(typeof certificate?.serialHex === 'string' ? { serialHex: certificate.serialHex } : {}),
      ...(typeof owner?.clientId === 'string' ? { owner: owner.clientId } : {}),
      ...(typeof certificate?.activatedBy === 'string' ? { activatedBy: certificate.activatedBy } : {}),
    };
  }

  /**
   * The items of one issuance, in the order the cancellation reasons are read: REQ# and SERIAL# only if
   * new, the assertion's entry only if new or already this request's, the key's only if new. A
   * replacement's REQ# only over the record of the serial it supersedes, replaced fewer than
   * MAX_REPLACEMENTS times, and a
   * fifth item: that serial revoked `superseded`, only if on record and not revoked.
   */
  public issuanceItems({ certificate, registers }: CertificateToRecord): TransactItem[] {
    const TableName = this.options.tableName;
    const { requestId, serialHex, supersedes } = certificate;
    const request: TransactItem =
      supersedes === undefined
        ? {
            Put: {
              TableName,
              Item: { pk: requestKey(requestId), kind: 'request', ...certificate },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          }
        : {
            Put: {
              TableName,
              Item: { pk: requestKey(requestId), kind: 'request', ...certificate },
              // Only over the certificate it replaces, and at most MAX_REPLACEMENTS per request.
              ConditionExpression:
                'serialHex = :previous AND (attribute_not_exists(replacements) OR replacements < :max)',
              ExpressionAttributeValues: { ':previous': supersedes, ':max': MAX_REPLACEMENTS },
            },
          };
    return [
      request,
      { Put: { TableName, Item: serialItem(certificate), ConditionExpression: 'attribute_not_exists(pk)' } },
      {
        Put: {
          TableName,
          Item: {
            pk: assertionKey(registers.assertionKey),
            kind: 'assertion',
            requestId,
            serialHex,
            ...(certificate.attemptId === undefined ? {} : { attemptId: certificate.attemptId }),
            expiresAt: registers.assertionExpiresAt,
          },
          ConditionExpression: 'attribute_not_exists(pk) OR requestId = :request',
          ExpressionAttributeValues: { ':request': requestId },
        },
      },
      {
        Put: {
          TableName,
          Item: {
            pk: publicKeyKey(certificate.publicKeyHash),
            kind: 'public-key',
            requestId,
            serialHex,
            expiresAt: registers.publicKeyExpiresAt,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      ...(supersedes === undefined ? [] : [this.supersededItem(supersedes, certificate)]),
    ];
  }

  /**
   * The revocation of a superseded serial (an update: nothing else of its record is written back), only
   * if it is on record and not revoked, so no revocation is ever rewritten or undone by a replacement.
   */
  /**
   * The items of a one-time credential's release to a request: its REQ# marked `activatedBy` only if it
   * still has that serial and no other request, its SERIAL# only if not revoked, the assertion's entry
   * only if new or already this request's.
   */
  public activationItems(activation: LoggedActivation): TransactItem[] {
    const TableName = this.options.tableName;
    const { credentialRequestId, requestId, serialHex } = activation;
    return [
      {
        Update: {
          TableName,
          Key: { pk: requestKey(credentialRequestId) },
          UpdateExpression: 'SET activatedBy = :request, activatedAt = :at',
          ConditionExpression:
            'serialHex = :serial AND (attribute_not_exists(activatedBy) OR activatedBy = :request)',
          ExpressionAttributeValues: {
            ':request': requestId,
            ':at': activation.activatedAt,
            ':serial': serialHex,
          },
        },
      },
      {
        ConditionCheck: {
          TableName,
          Key: { pk: serialKey(serialHex) },
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(revokedAt)',
        },
      },
      {
        Put: {
          TableName,
          Item: {
            pk: assertionKey(activation.assertionKey),
            kind: 'assertion',
            requestId,
            serialHex,
            ...(activation.attemptId === undefined ? {} : { attemptId: activation.attemptId }),
            expiresAt: activation.assertionExpiresAt,
          },
          ConditionExpression: 'attribute_not_exists(pk) OR requestId = :request',
          ExpressionAttributeValues: { ':request': requestId },
        },
      },
    ];
  }

  private supersededItem(previous: string, replacement: IssuedCertificateRecord): TransactItem {
    const attributes = revocationAttributes({
      revokedAt: replacement.issuedAt,
      reason: 'superseded',
      revokedBy: SUPERSEDED_BY_CA,
    });
    return {
      Update: {
        TableName: this.options.tableName,
        ...revocationUpdate(previous, attributes, { supersededBy: replacement.serialHex }),
      },
    };
  }

  public async statuses(serialHexes: readonly string[]): Promise<Map<string, CertificateStatus>> {
    const items = await batchGetConsistent(
      this.doc,
      this.options.tableName,
      [...new Set(serialHexes)].map((s) => ({ pk: serialKey(s) })),
    );
    return new Map(items.map((item) => [String(item.serialHex), toStatus(item)]));
  }

  public async revoke(serialHex: string, revocation: Revocation): Promise<StoredRevokeOutcome> {
    const attributes = revocationAttributes(revocation);
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          ...revocationUpdate(serialHex, attributes),
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

  /** One issuance transaction (items as issuanceItems orders them); a refusal says which condition failed. */
  private async write(
    certificate: IssuedCertificateRecord,
    items: TransactItem[],
  ): Promise<RecordIssuedResult> {
    const { requestId } = certificate;
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return { stored: true };
    } catch (err) {
      if (!(err instanceof TransactionCanceledException)) throw err;
      const failed = (err.CancellationReasons ?? []).map((r) => r.Code === 'ConditionalCheckFailed');
      if (!failed[REQUEST_ITEM]) {
        if (failed[SERIAL_ITEM]) throw new SerialCollisionError();
        if (failed[ASSERTION_ITEM]) return { stored: false, conflict: 'assertion-used' };
        if (failed[PUBLIC_KEY_ITEM]) return { stored: false, conflict: 'public-key-certified' };
        if (failed[PREVIOUS_SERIAL_ITEM]) return { stored: false, conflict: 'previous-revoked' };
      }
      // Lost to another issuance (its condition, or a TransactionConflict with its write): theirs stands.
      const existing = await this.getByRequest(requestId);
      if (existing) return { stored: false, existing };
      throw err;
    }
  }
}

/** Items of an audit entry's own in a carrying append: the entry and its chain head. */
const AUDIT_ITEMS = 2;
/** Items of the requests one transaction carries beside the audit entry's two (24 first issuances). */
const LOGGED_ITEMS = MAX_TRANSACTION_ITEMS - AUDIT_ITEMS;

/**
 * Issued certificates with the audit entry that logs them (LoggedCertificateStore): per group of
 * requests, one transaction of the entry, its chain head and each request's four items (issuanceItems),
 * all or nothing (the audit log's carrying append). So no certificate is stored without its
 * `certificate.issued` event, and no event is committed for a certificate that was not stored.
 */
export class LoggedCertificateRepository implements LoggedCertificateStore {
  public constructor(
    private readonly certificates: CertificateRepository,
    private readonly audit: CarryingAuditSink,
  ) {}

  public async recordLogged(items: readonly LoggedIssuance[]): Promise<LoggedIssuanceResult[]> {
    const results: LoggedIssuanceResult[] = [];
    for (const group of transactionsOf(items, (item) => this.certificates.issuanceItems(item.record))) {
      const outcome = await this.audit.appendCarrying(
        // A replacement's revocation of the serial it supersedes is logged before its issuance.
        group.flatMap(({ item }) => (item.revoked ? [item.revoked, item.event] : [item.event])),
        group.map(({ writes }) => writes),
      );
      results.push(
        ...group.map((_, k): LoggedIssuanceResult => {
          if (outcome.written) return 'stored';
          return outcome.refused[k] ? 'refused' : 'cancelled';
        }),
      );
    }
    return results;
  }

  public async recordActivation(activation: LoggedActivation): Promise<boolean> {
    const outcome = await this.audit.appendCarrying(
      [activation.event],
      [this.certificates.activationItems(activation)],
    );
    return outcome.written;
  }
}

/** Items with their writes, in order, cut into groups that fit one transaction beside the entry. */
function transactionsOf<T>(
  items: readonly T[],
  writesOf: (item: T) => TransactItem[],
): Array<Array<{ item: T; writes: TransactItem[] }>> {
  const groups: Array<Array<{ item: T; writes: TransactItem[] }>> = [];
  let current: Array<{ item: T; writes: TransactItem[] }> = [];
  let size = 0;
  for (const item of items) {
    const writes = writesOf(item);
    if (current.length > 0 && size + writes.length > LOGGED_ITEMS) {
      groups.push(current);
      current = [];
      size = 0;
    }
    current.push({ item, writes });
    size += writes.length;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

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

/**
 * The update that revokes a serial's record, only if it is on record and not revoked (no revocation is
 * rewritten or undone): a client's or operator's revocation, or a takeover's `superseded` one, which also
 * names its replacement.
 */
function revocationUpdate(
  serialHex: string,
  attributes: ReturnType<typeof revocationAttributes>,
  replacement?: { readonly supersededBy: string },
): {
  Key: Record<string, string>;
  UpdateExpression: string;
  ConditionExpression: string;
  ExpressionAttributeValues: Record<string, unknown>;
} {
  return {
    Key: { pk: serialKey(serialHex) },
    UpdateExpression: `SET revokedAt = :at, revocationReason = :reason, revokedBy = :by, revokedList = :list${
      replacement ? ', supersededBy = :next' : ''
    }`,
    ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(revokedAt)',
    ExpressionAttributeValues: {
      ':at': attributes.revokedAt,
      ':reason': attributes.revocationReason,
      ':by': attributes.revokedBy,
      ':list': attributes.revokedList,
      ...(replacement ? { ':next': replacement.supersededBy } : {}),
    },
  };
}
