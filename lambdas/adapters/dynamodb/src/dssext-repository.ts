import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { seal, secretHash, unseal } from '@pipeline/core/csc';

export interface DssExtRepositoryOptions {
  readonly tableName: string;
}

/** A login as the DSS-Ext door keeps it (the door's DssFlow). */
interface DssFlowItem {
  readonly signRequest: string;
  readonly assertion?: string;
  readonly expiresAt: number;
}

/**
 * The DSS-Ext door's state (TABLES.dssExt): `REQ#<key>`, a SignRequest's RequestID once (a conditional
 * put); `FLOW#<sha256 of the flow id>`, a login, what it holds sealed under the flow id (core `seal`) with
 * the item key as AAD, answered once by a conditional update. `expiresAt` (epoch seconds) is the TTL and
 * a condition, since DynamoDB removes expired items only eventually.
 */
export class DssExtRepository {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: DssExtRepositoryOptions,
  ) {}

  public async registerRequest(key: string, expiresAt: number): Promise<boolean> {
    return this.conditional(
      new PutCommand({
        TableName: this.options.tableName,
        Item: { pk: `REQ#${key}`, expiresAt },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  public async putFlow(flowId: string, flow: DssFlowItem): Promise<void> {
    const pk = flowKey(flowId);
    await this.doc.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: { pk, flow: seal(flowId, pk, { signRequest: flow.signRequest }), expiresAt: flow.expiresAt },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  public async answerFlow(
    flowId: string,
    assertion: string,
    nowSeconds: number,
  ): Promise<DssFlowItem | undefined> {
    const pk = flowKey(flowId);
    const flow = await this.getFlow(flowId, nowSeconds);
    if (flow === undefined || flow.assertion !== undefined) return undefined;
    const answered = await this.conditional(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: { pk },
        UpdateExpression: 'SET answer = :answer',
        ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(answer) AND expiresAt > :now',
        ExpressionAttributeValues: { ':answer': seal(flowId, `${pk}#answer`, assertion), ':now': nowSeconds },
      }),
    );
    return answered ? { ...flow, assertion } : undefined;
  }

  public async getFlow(flowId: string, nowSeconds: number): Promise<DssFlowItem | undefined> {
    const pk = flowKey(flowId);
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.options.tableName, Key: { pk }, ConsistentRead: true }),
    );
    if (!Item || (Item.expiresAt as number) <= nowSeconds) return undefined;
    const flow = unseal<{ signRequest: string }>(flowId, pk, Item.flow);
    if (flow === undefined) return undefined;
    const assertion =
      Item.answer === undefined ? undefined : unseal<string>(flowId, `${pk}#answer`, Item.answer);
    // An answer that does not unseal is no answer anyone may use: the login counts as answered.
    return {
      signRequest: flow.signRequest,
      expiresAt: Item.expiresAt as number,
      ...(Item.answer === undefined ? {} : { assertion: assertion ?? '' }),
    };
  }

  private async conditional(command: PutCommand | UpdateCommand): Promise<boolean> {
    try {
      await this.doc.send(command as PutCommand);
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }
}

function flowKey(flowId: string): string {
  return `FLOW#${secretHash(flowId)}`;
}
