import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type {
  CscCode,
  CscFlow,
  CscGrant,
  CscPendingResponse,
  CscPushedRequest,
  CscStore,
  TokenUse,
} from '@pipeline/core/csc';
import { seal, secretHash, unseal } from '@pipeline/core/csc';

export interface CscRepositoryOptions {
  readonly tableName: string;
}

type Item = Record<string, unknown>;

/**
 * The CSC API's OAuth 2.0 state (TABLES.csc), one item per step, keyed by the hash of its secret:
 * `PAR#<sha256>` (a pushed authorization request), `RESP#<sha256>` (an asynchronous signature),
 * `FLOW#<sha256 of the state>`, `CODE#<sha256>`, `TOKEN#<sha256>`; what an item holds for the holder of
 * its secret is sealed under that secret with the key as AAD (core `seal`). Each step is taken once by a conditional write
 * (a delete returning the item, or an update that marks a token used), so two concurrent presentations
 * of one code or one credential token cannot both succeed. `expiresAt` (epoch seconds) is the TTL and is
 * also a condition: DynamoDB removes expired items only eventually.
 */
export class CscRepository implements CscStore {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: CscRepositoryOptions,
  ) {}

  public async putResponse(
    responseID: string,
    accessToken: string,
    response: CscPendingResponse,
  ): Promise<void> {
    const pk = `RESP#${secretHash(responseID)}`;
    await this.put(pk, {
      response: seal(responseSecret(responseID, accessToken), pk, response),
      expiresAt: response.expiresAt,
    });
  }

  public async getResponse(
    responseID: string,
    accessToken: string,
    nowSeconds: number,
  ): Promise<CscPendingResponse | undefined> {
    const pk = `RESP#${secretHash(responseID)}`;
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.options.tableName, Key: { pk }, ConsistentRead: true }),
    );
    if (!Item || (Item.expiresAt as number) <= nowSeconds) return undefined;
    return unseal<CscPendingResponse>(responseSecret(responseID, accessToken), pk, Item.response);
  }

  public async putPushed(uriHash: string, pushed: CscPushedRequest): Promise<void> {
    await this.put(`PAR#${uriHash}`, {
      clientId: pushed.clientId,
      params: JSON.stringify(pushed.params),
      expiresAt: pushed.expiresAt,
    });
  }

  public async takePushed(
    uriHash: string,
    clientId: string,
    nowSeconds: number,
  ): Promise<CscPushedRequest | undefined> {
    const item = await this.take(`PAR#${uriHash}`, 'clientId = :client AND expiresAt > :now', {
      ':client': clientId,
      ':now': nowSeconds,
    });
    return item
      ? {
          clientId,
          params: JSON.parse(item.params as string) as Record<string, string>,
          expiresAt: item.expiresAt as number,
        }
      : undefined;
  }

  public async putFlow(flow: CscFlow): Promise<void> {
    const pk = `FLOW#${secretHash(flow.id)}`;
    await this.put(pk, { flow: seal(flow.id, pk, flow), expiresAt: flow.expiresAt });
  }

  public async takeFlow(id: string, nowSeconds: number): Promise<CscFlow | undefined> {
    const pk = `FLOW#${secretHash(id)}`;
    const item = await this.take(pk, 'expiresAt > :now', { ':now': nowSeconds });
    const flow = item ? unseal<CscFlow>(id, pk, item.flow) : undefined;
    return flow?.id === id ? flow : undefined;
  }

  public async putCode(code: string, grant: CscCode): Promise<void> {
    const pk = `CODE#${secretHash(code)}`;
    await this.put(pk, {
      clientId: grant.clientId,
      grant: seal(code, pk, grant),
      expiresAt: grant.expiresAt,
    });
  }

  public async redeemCode(
    code: string,
    clientId: string,
    nowSeconds: number,
  ): Promise<CscCode | 'other-client' | undefined> {
    const pk = `CODE#${secretHash(code)}`;
    try {
      const { Attributes } = await this.doc.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: { pk },
          ConditionExpression: 'attribute_exists(pk) AND clientId = :client AND expiresAt > :now',
          ExpressionAttributeValues: { ':client': clientId, ':now': nowSeconds },
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const grant = Attributes ? unseal<CscCode>(code, pk, Attributes.grant) : undefined;
      // The sealed grant names its client: a plain clientId edited in the table does not move it.
      return grant?.clientId === clientId ? grant : undefined;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // The item as it was, in the low-level form (the document client does not convert exceptions).
      const owner = (err.Item as Record<string, { S?: string }> | undefined)?.clientId?.S;
      return owner !== undefined && owner !== clientId ? 'other-client' : undefined;
    }
  }

  public async putToken(accessToken: string, grant: CscGrant): Promise<void> {
    const pk = `TOKEN#${secretHash(accessToken)}`;
    await this.put(pk, {
      clientId: grant.clientId,
      grant: seal(accessToken, pk, grant),
      expiresAt: grant.expiresAt,
    });
  }

  public async getToken(accessToken: string, nowSeconds: number): Promise<TokenUse> {
    const pk = `TOKEN#${secretHash(accessToken)}`;
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.options.tableName, Key: { pk }, ConsistentRead: true }),
    );
    return tokenUse(Item, nowSeconds, accessToken, pk);
  }

  public async useToken(accessToken: string, nowSeconds: number): Promise<TokenUse> {
    const pk = `TOKEN#${secretHash(accessToken)}`;
    try {
      const { Attributes } = await this.doc.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { pk },
          // The grant (with the citizen's ID token) is forgotten with the token's one use.
          UpdateExpression: 'SET usedAt = :now REMOVE #grant',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(usedAt) AND expiresAt > :now',
          // GRANT is a reserved word of DynamoDB's expressions.
          ExpressionAttributeNames: { '#grant': 'grant' },
          ExpressionAttributeValues: { ':now': nowSeconds },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return tokenUse(Attributes, nowSeconds, accessToken, pk);
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // Which condition failed: read again (the answer only words the refusal).
      const again = await this.getToken(accessToken, nowSeconds);
      return again.ok ? { ok: false, reason: 'used' } : again;
    }
  }

  private async put(pk: string, attributes: Item): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: { pk, ...attributes },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  private async take(pk: string, condition: string, values: Item): Promise<Item | undefined> {
    try {
      const { Attributes } = await this.doc.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: { pk },
          ConditionExpression: `attribute_exists(pk) AND ${condition}`,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_OLD',
        }),
      );
      return Attributes;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return undefined;
      throw err;
    }
  }
}

function tokenUse(item: Item | undefined, nowSeconds: number, accessToken: string, pk: string): TokenUse {
  if (!item) return { ok: false, reason: 'unknown' };
  if (item.usedAt !== undefined) return { ok: false, reason: 'used' };
  if ((item.expiresAt as number) <= nowSeconds) return { ok: false, reason: 'expired' };
  // A grant not sealed under this token for this item (written or edited in the table) is no grant.
  const grant = unseal<CscGrant>(accessToken, pk, item.grant);
  return grant ? { ok: true, grant } : { ok: false, reason: 'unknown' };
}

/** The secret an asynchronous outcome is sealed under: only the responseID with the token that asked opens it. */
function responseSecret(responseID: string, accessToken: string): string {
  return `${responseID}.${accessToken}`;
}
