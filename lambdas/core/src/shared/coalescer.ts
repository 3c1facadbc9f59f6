/**
 * Gathers the calls concurrent work makes into batches: each caller submits one item and gets its own
 * result, while the items travel together through one `send`. A batch goes when it is full, when every
 * caller that could still join has submitted (the `waiting` hint), or when the window since its first
 * item has passed: the window bounds the added latency, the hint removes it when nobody else is coming.
 */

/** One item's answer from a batch send. */
export type Settled<O> =
  { readonly ok: true; readonly value: O } | { readonly ok: false; readonly error: unknown };

export interface CoalescerOptions {
  /** Longest wait after a batch's first item for more to join (ms); 0 sends each item at once. */
  readonly windowMs: number;
  /** Most items per send. */
  readonly maxBatch: number;
  /** How many callers could still submit (e.g. attempts in flight): once all have, the batch goes. */
  readonly waiting?: () => number;
}

/** Sends a batch; resolves one answer per item, in order, or rejects for all of them. */
export type BatchSender<I, O> = (items: readonly I[]) => Promise<readonly Settled<O>[]>;

interface Queued<I, O> {
  readonly item: I;
  readonly resolve: (value: O) => void;
  readonly reject: (err: unknown) => void;
}

export class Coalescer<I, O> {
  private queue: Queued<I, O>[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  public constructor(
    private readonly send: BatchSender<I, O>,
    private readonly options: CoalescerOptions,
  ) {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1)
      throw new RangeError('maxBatch must be >= 1');
  }

  public submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      const everyone = this.options.waiting !== undefined && this.queue.length >= this.options.waiting();
      if (this.queue.length >= this.options.maxBatch || everyone || this.options.windowMs <= 0) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.options.windowMs);
    });
  }

  /** Items queued and not sent yet. */
  public get queued(): number {
    return this.queue.length;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0) void this.dispatch(this.queue.splice(0, this.options.maxBatch));
  }

  private async dispatch(batch: readonly Queued<I, O>[]): Promise<void> {
    let answers: readonly Settled<O>[];
    try {
      answers = await this.send(batch.map((q) => q.item));
      if (answers.length !== batch.length)
        throw new Error(`batch send answered ${answers.length} of ${batch.length}`);
    } catch (err) {
      for (const q of batch) q.reject(err);
      return;
    }
    batch.forEach((q, i) => {
      const answer = answers[i];
      if (answer.ok) q.resolve(answer.value);
      else q.reject(answer.error);
    });
  }
}
