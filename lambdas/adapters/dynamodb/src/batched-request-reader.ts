/**
 * Reads request records for many waiting clients at once: `get` calls are answered on a shared clock
 * tick (every `tickMs` of wall time) by one strongly consistent BatchGetItem (up to 100 keys), not one
 * GetItem each. Long-polling clients of one API process, which poll at most once per tick, then cost the
 * table (and the process's CPU, which the SDK call dominates) at most 1000 / tickMs batch reads per
 * second, whatever their number.
 */
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { StoredSignRequest } from '../../../core/src';

const BATCH_LIMIT = 100;

interface Waiter {
  resolve(record: StoredSignRequest | undefined): void;
  reject(error: unknown): void;
}

export class BatchedRequestReader {
  private readonly waiting = new Map<string, Waiter[]>();
  private timer: NodeJS.Timeout | undefined;

  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: { readonly tableName: string; readonly tickMs?: number },
  ) {}

  public get(id: string): Promise<StoredSignRequest | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(id) ?? [];
      waiters.push({ resolve, reject });
      this.waiting.set(id, waiters);
      const tick = this.options.tickMs ?? 25;
      this.timer ??= setTimeout(() => void this.flush(), tick - (Date.now() % tick));
    });
  }

  private async flush(): Promise<void> {
    this.timer = undefined;
    const batch = new Map<string, Waiter[]>();
    for (const [id, waiters] of this.waiting) {
      if (batch.size === BATCH_LIMIT) break;
      batch.set(id, waiters);
      this.waiting.delete(id);
    }
    // More than one batch waiting: the rest goes out right away, in parallel.
    if (this.waiting.size > 0) this.timer = setTimeout(() => void this.flush(), 0);
    try {
      const found = await this.read([...batch.keys()]);
      for (const [id, waiters] of batch) for (const w of waiters) w.resolve(found.get(id));
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
    }
  }

  /** One BatchGetItem, re-asking for unprocessed keys (DynamoDB may return part of a batch). */
  private async read(ids: string[]): Promise<Map<string, StoredSignRequest>> {
    const found = new Map<string, StoredSignRequest>();
    let keys: Array<Record<string, unknown>> = ids.map((id) => ({ id }));
    for (let attempt = 0; keys.length > 0; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(200, 10 * 2 ** attempt)));
      if (attempt > 6) throw new Error('BatchGetItem left keys unprocessed after retries');
      const out = await this.doc.send(
        new BatchGetCommand({
          RequestItems: { [this.options.tableName]: { Keys: keys, ConsistentRead: true } },
        }),
      );
      for (const item of out.Responses?.[this.options.tableName] ?? []) {
        found.set(item.id as string, item as StoredSignRequest);
      }
      keys = out.UnprocessedKeys?.[this.options.tableName]?.Keys ?? [];
    }
    return found;
  }
}
