/**
 * Many conditional writes in few round trips: each logical write (a group of one or more items that must
 * land together) goes into a shared TransactWriteItems of up to 100 items. DynamoDB cancels the whole
 * transaction when any condition fails; its cancellation reasons name the items, so the groups whose
 * conditions failed are answered `false` and the others are written again without them. Reasons that
 * are not about a condition (a conflicting transaction, throttling) retry the group a few times.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { backoffDelay, PipelineError, sleep } from '@pipeline/core/shared';

/** One item of a TransactWriteItems, as the document client takes it. */
export type TransactItem = NonNullable<
  ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']
>[number];

type CancellationReasons = NonNullable<TransactionCanceledException['CancellationReasons']>;

/**
 * For consecutive groups of items starting at `offset` in a cancelled transaction: whether a condition
 * of each group failed (its reasons name `ConditionalCheckFailed`), by the reasons' positions.
 */
export function conditionFailedByGroup(
  reasons: CancellationReasons,
  groupSizes: readonly number[],
  offset = 0,
): boolean[] {
  return groupSizes.map((size) => {
    const failed = reasons.slice(offset, offset + size).some((r) => r.Code === 'ConditionalCheckFailed');
    offset += size;
    return failed;
  });
}

/** DynamoDB's limit of items per TransactWriteItems. */
export const MAX_TRANSACTION_ITEMS = 100;
const MAX_ROUNDS = 5;
/** Contended items: 10 ms doubling (at most 80 ms before the last round). */
const CONTENDED_BACKOFF = { baseMs: 10, maxMs: 100 };

/** The write is not known to have landed or not (retries exhausted): callers must not assume either. */
export class TransactionOutcomeUnknownError extends PipelineError {
  public override readonly name = 'TransactionOutcomeUnknownError';
  public constructor(message: string) {
    super(message, 'TRANSACTION_OUTCOME_UNKNOWN');
  }
}

/**
 * Writes each group atomically, as few transactions as fit. Resolves per group: true written, false a
 * condition of the group failed (nothing of it written). Rejects (per the whole call) only on errors that
 * leave outcomes unknown.
 */
export async function transactGroups(
  doc: DynamoDBDocumentClient,
  groups: readonly (readonly TransactItem[])[],
): Promise<boolean[]> {
  const results = new Array<boolean>(groups.length);
  let pending = groups.map((_, i) => i);
  for (let round = 0; pending.length > 0; round++) {
    if (round >= MAX_ROUNDS) {
      throw new TransactionOutcomeUnknownError(
        `${pending.length} writes still contended after ${round} rounds`,
      );
    }
    if (round > 0) await sleep(backoffDelay(round, CONTENDED_BACKOFF));
    const retry: number[] = [];
    for (const chunk of chunks(pending, groups)) {
      const items = chunk.flatMap((i) => groups[i]);
      try {
        await doc.send(new TransactWriteCommand({ TransactItems: items }));
        for (const i of chunk) results[i] = true;
      } catch (err) {
        const reasons = err instanceof TransactionCanceledException ? err.CancellationReasons : undefined;
        if (!reasons) throw err;
        const failed = conditionFailedByGroup(
          reasons,
          chunk.map((i) => groups[i].length),
        );
        chunk.forEach((i, k) => (failed[k] ? (results[i] = false) : retry.push(i)));
      }
    }
    pending = retry;
  }
  return results;
}

/** Consecutive groups packed into transactions of at most MAX_TRANSACTION_ITEMS items. */
function chunks(indexes: readonly number[], groups: readonly (readonly TransactItem[])[]): number[][] {
  const out: number[][] = [];
  let current: number[] = [];
  let size = 0;
  for (const i of indexes) {
    const n = groups[i].length;
    if (size + n > MAX_TRANSACTION_ITEMS && current.length > 0) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(i);
    size += n;
  }
  if (current.length > 0) out.push(current);
  return out;
}
