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

export interface CscRepositoryOptions {
  readonly tableName: string;
}

type Item = Record<string, unknown>;

/**
 * The CSC API's OAuth 2.0 state (TABLES.csc), one item per step, keyed by the hash of its secret:
 * `PAR#<sha256>` (a pushed authorization request), `RESP#<sha256>` (an asynchronous signature), `FLOW#<state>`, `CODE#<sha256>`, `TOKEN#<sha256>`. Each step is taken once by a conditional write
 * (a delete returning the item, or an update that marks a token used), so two concurrent presentations
 * of one code or one credential token cannot both succeed. `expiresAt` (epoch seconds) is the TTL and is
 * also a condition: DynamoDB removes expired items only eventually.
 */
export class CscRepository implements CscStore {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: CscRepositoryOptions,
  ) {}

  public async putResponse(responseHash: string, response: CscPendingResponse): Promise<void> {
    await this.put(`RESP#${responseHash}`, {
      clientId: response.clientId,
      response: JSON.stringify(response),
      expiresAt: response.expiresAt,
    });
  }

  public async getResponse(
    responseHash: string,
    nowSeconds: number,
  ): Promise<CscPendingResponse | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: `RESP#${responseHash}` },
        ConsistentRead: true,
      }),
    );
    if (!Item || (Item.expiresAt as number) <= nowSeconds) return undefined;
    return JSON.parse(Item.response as string) as CscPendingResponse;
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
    await this.put(`FLOW#${flow.id}`, { flow: JSON.stringify(flow), expiresAt: flow.expiresAt });
  }

  public async takeFlow(id: string, nowSeconds: number): Promise<CscFlow | undefined> {
    const item = await this.take(`FLOW#${id}`, 'expiresAt > :now', { ':now': nowSeconds });
    return item ? (JSON.parse(item.flow as string) as CscFlow) : undefined;
  }

  public async putCode(codeHash: string, code: CscCode): Promise<void> {
    await this.put(`CODE#${codeHash}`, {
      clientId: code.clientId,
      grant: JSON.stringify(code),
      expiresAt: code.expiresAt,
    });
  }

  public async redeemCode(
    codeHash: string,
    clientId: string,
    nowSeconds: number,
  ): Promise<CscCode | 'other-client' | undefined> {
    try {
      const { Attributes } = await this.doc.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: { pk: `CODE#${codeHash}` },
          ConditionExpression: 'attribute_exists(pk) AND clientId = :client AND expiresAt > :now',
          ExpressionAttributeValues: { ':client': clientId, ':now': nowSeconds },
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return Attributes ? (JSON.parse(Attributes.grant as string) as CscCode) : undefined;
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // The item as it was, in the low-level form (the document client does not convert exceptions).
      const owner = (err.Item as Record<string, { S?: string }> | undefined)?.clientId?.S;
      return owner !== undefined && owner !== clientId ? 'other-client' : undefined;
    }
  }

  public async putToken(tokenHash: string, grant: CscGrant): Promise<void> {
    const { idToken, ...rest } = grant;
    await this.put(`TOKEN#${tokenHash}`, {
      clientId: grant.clientId,
      grant: JSON.stringify(rest),
      ...(idToken === undefined ? {} : { idToken }),
      expiresAt: grant.expiresAt,
    });
  }

  public async getToken(tokenHash: string, nowSeconds: number): Promise<TokenUse> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: `TOKEN#${tokenHash}` },
        ConsistentRead: true,
      }),
    );
    return tokenUse(Item, nowSeconds);
  }

  public async useToken(tokenHash: string, nowSeconds: number): Promise<TokenUse> {
    try {
      const { Attributes } = await this.doc.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { pk: `TOKEN#${tokenHash}` },
          // The ID token is forgotten with the token's one use.
          UpdateExpression: 'SET usedAt = :now REMOVE idToken',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(usedAt) AND expiresAt > :now',
          ExpressionAttributeValues: { ':now': nowSeconds },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return tokenUse(Attributes, nowSeconds);
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // Which condition failed: read again (the answer only words the refusal).
      const again = await this.getToken(tokenHash, nowSeconds);
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

function tokenUse(item: Item | undefined, nowSeconds: number): TokenUse {
  if (!item) return { ok: false, reason: 'unknown' };
  if (item.usedAt !== undefined) return { ok: false, reason: 'used' };
  if ((item.expiresAt as number) <= nowSeconds) return { ok: false, reason: 'expired' };
  const grant = JSON.parse(item.grant as string) as CscGrant;
  return {
    ok: true,
    grant: { ...grant, ...(typeof item.idToken === 'string' ? { idToken: item.idToken } : {}) },
  };
}
