/**
 * Bounds on-the-fly key generation when the pool has no key of a type: at most `maxInFlight`
 * generations of one key type run at once in this process. A request beyond that waits up to `waitMs`
 * for a free slot, looking in the pool again every `reclaimEveryMs` (keygen may have refilled it), and
 * is otherwise refused. An RSA generation holds an HSM session for hundreds of milliseconds: without a
 * bound, one drained key type would queue the requests of every type behind its generations.
 *
 * The queue is bounded too (`maxWaiting`, by default as many as may generate): a waiting request holds
 * one of the process's record slots, so a long queue of one type would starve the others just as well;
 * a request that finds the queue full is refused at once.
 *
 * Slots are handed straight from a finishing generation to a waiter of its type, so a new request never
 * overtakes one that is waiting: the longest waiter of the client that holds the fewest slots of the type,
 * so the budget is split between clients (one client's flood of requests does not take every generation
 * from the others' requests).
 */
import type { KeyType } from '../shared/algorithms';

export interface FallbackLimiterOptions {
  /** On-the-fly generations of one key type in flight at once. */
  readonly maxInFlight: number;
  /** Longest a request waits for a slot or a pool key before it is refused (ms). */
  readonly waitMs: number;
  /** Requests of one key type that may wait at once; default maxInFlight. */
  readonly maxWaiting?: number;
  /** How often a waiting request looks in the pool again (ms); default 500. */
  readonly reclaimEveryMs?: number;
  /** Epoch ms; default Date.now. */
  readonly clock?: () => number;
  /** Runs fn after ms and returns a cancel; default setTimeout. */
  readonly timer?: (fn: () => void, ms: number) => () => void;
}

/** Frees a generation slot; calling it again does nothing. */
export type ReleaseSlot = () => void;

/** What a request without a pool key gets: a slot to generate in, a pool key found while it waited, or no. */
export type FallbackDecision<K> =
  | { readonly kind: 'slot'; readonly release: ReleaseSlot }
  | { readonly kind: 'key'; readonly key: K }
  | { readonly kind: 'refused' };

interface Waiter {
  /** The client whose request waits ('' when not told). */
  readonly client: string;
  /** A slot handed over by a finishing generation. */
  granted?: ReleaseSlot;
  /** Ends the current wait early (set while waiting). */
  wake?: () => void;
}

const defaultTimer = (fn: () => void, ms: number): (() => void) => {
  const handle = setTimeout(fn, ms);
  return () => clearTimeout(handle);
};

export class FallbackLimiter {
  private readonly active = new Map<KeyType, number>();
  /** Slots in use per key type and client. */
  private readonly held = new Map<KeyType, Map<string, number>>();
  private readonly queues = new Map<KeyType, Waiter[]>();
  private readonly clock: () => number;
  private readonly timer: (fn: () => void, ms: number) => () => void;
  private readonly reclaimEveryMs: number;
  private readonly maxWaiting: number;

  public constructor(private readonly options: FallbackLimiterOptions) {
    if (!Number.isInteger(options.maxInFlight) || options.maxInFlight < 1) {
      throw new RangeError('maxInFlight must be an integer >= 1');
    }
    if (
      options.maxWaiting !== undefined &&
      !(Number.isInteger(options.maxWaiting) && options.maxWaiting >= 0)
    ) {
      throw new RangeError('maxWaiting must be an integer >= 0');
    }
    this.clock = options.clock ?? Date.now;
    this.timer = options.timer ?? defaultTimer;
    this.reclaimEveryMs = Math.max(1, options.reclaimEveryMs ?? 500);
    this.maxWaiting = options.maxWaiting ?? options.maxInFlight;
  }

  /** Generations of the type in flight now. */
  public inFlight(keyType: KeyType): number {
    return this.active.get(keyType) ?? 0;
  }

  /** Requests of the type waiting for a slot now. */
  public waiting(keyType: KeyType): number {
    return this.queues.get(keyType)?.length ?? 0;
  }

  /**
   * A slot at once if one is free; else, when the queue has room, waits for one, calling `reclaim`
   * after each `reclaimEveryMs` (a key it returns ends the wait), and is refused once `waitMs` has passed.
   */
  public async acquire<K>(
    keyType: KeyType,
    reclaim: () => Promise<K | undefined>,
    client = '',
    /**
     * A request with no other chance (its message's last delivery): it waits this long instead of
     * `waitMs`, and joins the queue even when it is full.
     */
    lastChanceWaitMs?: number,
  ): Promise<FallbackDecision<K>> {
    const queue = this.queues.get(keyType) ?? [];
    this.queues.set(keyType, queue);
    if (queue.length === 0 && this.inFlight(keyType) < this.options.maxInFlight) {
      this.active.set(keyType, this.inFlight(keyType) + 1);
      return { kind: 'slot', release: this.slot(keyType, client) };
    }
    if (queue.length >= this.maxWaiting && lastChanceWaitMs === undefined) return { kind: 'refused' };
    const deadline = this.clock() + Math.max(this.options.waitMs, lastChanceWaitMs ?? 0);
    const waiter: Waiter = { client };
    queue.push(waiter);
    let used = false;
    try {
      for (;;) {
        if (waiter.granted) {
          used = true;
          return { kind: 'slot', release: waiter.granted };
        }
        const remaining = deadline - this.clock();
        if (remaining <= 0) return { kind: 'refused' };
        await this.sleep(waiter, Math.min(remaining, this.reclaimEveryMs));
        if (waiter.granted) continue;
        const key = await reclaim();
        if (key !== undefined) return { kind: 'key', key };
      }
    } finally {
      const at = queue.indexOf(waiter);
      if (at >= 0) queue.splice(at, 1);
      // A slot handed over while this request found a key (or failed) goes on to the next one.
      if (waiter.granted && !used) waiter.granted();
    }
  }

  private sleep(waiter: Waiter, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        waiter.wake = undefined;
        resolve();
      };
      const cancel = this.timer(done, ms);
      waiter.wake = () => {
        cancel();
        done();
      };
    });
  }

  private slot(keyType: KeyType, client: string): ReleaseSlot {
    const held = this.held.get(keyType) ?? new Map<string, number>();
    this.held.set(keyType, held);
    held.set(client, (held.get(client) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (held.get(client) ?? 1) - 1;
      if (left > 0) held.set(client, left);
      else held.delete(client);
      const next = this.nextWaiter(keyType, held);
      if (next) {
        // Handed over: the count of generations in flight stays as it is.
        next.granted = this.slot(keyType, next.client);
        next.wake?.();
      } else {
        this.active.set(keyType, this.inFlight(keyType) - 1);
      }
    };
  }

  /** Takes the longest waiter of the client holding the fewest slots of the type out of its queue. */
  private nextWaiter(keyType: KeyType, held: ReadonlyMap<string, number>): Waiter | undefined {
    const queue = this.queues.get(keyType);
    if (!queue || queue.length === 0) return undefined;
    let best = 0;
    for (let i = 1; i < queue.length; i++) {
      if ((held.get(queue[i].client) ?? 0) < (held.get(queue[best].client) ?? 0)) best = i;
    }
    return queue.splice(best, 1)[0];
  }
}
