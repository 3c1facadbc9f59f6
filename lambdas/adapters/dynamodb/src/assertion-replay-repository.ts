import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AssertionReplayStore } from '@pipeline/core/identity';

export interface AssertionReplayRepositoryOptions {
  readonly tableName: string;
}

/**
 * Used identity assertions (TABLES.assertions): one conditional PutItem per accepted assertion. The item
 * names the request and the client that used it; the same pair may present the assertion again (a resend
 * after a lost answer), anyone else is refused. Items expire with the assertion (TTL `expiresAt`, seconds).
 */
export class AssertionReplayRepository implements AssertionReplayStore {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: AssertionReplayRepositoryOptions,
  ) {}

  public async claim(
    replayKey: string,
    use: { readonly requestId: string; readonly clientId: string; readonly expiresAt: number },
  ): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: {
            pk: replayKey,
            requestId: use.requestId,
            clientId: use.clientId,
            expiresAt: Math.ceil(use.expiresAt / 1000),
          },
          ConditionExpression:
            'attribute_not_exists(pk) OR (requestId = :requestId AND clientId = :clientId)',
          ExpressionAttributeValues: { ':requestId': use.requestId, ':clientId': use.clientId },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }
}
