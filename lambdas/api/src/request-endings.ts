/**
 * Word that a request has ended, for the clients waiting on it in this process: the waits of GET and of
 * POST with `wait` sleep until a signer says the request ended, then read the record once, instead of
 * polling the table. The word carries only the request id: what the client is answered is still what
 * the table says, so a false or repeated word costs one read and changes nothing. A word may be lost (a
 * signer killed between its write and its word, a signer that cannot reach this process), so a waiter
 * also reads after a fallback interval.
 *
 * Ids said to have ended are kept for `rememberMs`, so a wait that starts just after the word (the record
 * read before the word, the wait registered after it) returns at once; a word said before the waiter's
 * last read does not (that read saw what the word was about, or the word was false). Before is by the
 * order words arrive in (`mark`), not by the clock.
 */
import type { RequestEndings } from './types';

export interface RequestEndingSignalsOptions {
  /** How long an ended id is remembered for a wait that starts late (ms); default 30000. */
  readonly rememberMs?: number;
  /** Epoch ms; default Date.now. */
  readonly clock?: () => number;
}

export class RequestEndingSignals implements RequestEndings {
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Ids said to have ended, in the order they were said (Map order), with when and their word's number. */
  private readonly ended = new Map<string, { readonly at: number; readonly word: number }>();
  /** Words so far. */
  private words = 0;
  private readonly rememberMs: number;
  private readonly clock: () => number;

  public constructor(options: RequestEndingSignalsOptions = {}) {
    this.rememberMs = options.rememberMs ?? 30_000;
    this.clock = options.clock ?? Date.now;
  }

  /** The request has ended (signed or failed): its waiters wake, and a later wait returns at once. */
  public announce(id: string): void {
    const now = this.clock();
    for (const [old, { at }] of this.ended) {
      if (now - at < this.rememberMs) break;
      this.ended.delete(old);
    }
    this.ended.delete(id);
    this.ended.set(id, { at: now, word: ++this.words });
    const waiting = this.waiters.get(id);
    if (!waiting) return;
    this.waiters.delete(id);
    for (const wake of waiting) wake();
  }

  public mark(): number {
    return this.words;
  }

  public wait(id: string, ms: number, since: number): Promise<boolean> {
    const said = this.ended.get(id);
    if (said !== undefined && said.word > since) return Promise.resolve(true);
    if (ms <= 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const waiting = this.waiters.get(id) ?? new Set<() => void>();
      this.waiters.set(id, waiting);
      const wake = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        waiting.delete(wake);
        if (waiting.size === 0 && this.waiters.get(id) === waiting) this.waiters.delete(id);
        resolve(false);
      }, ms);
      waiting.add(wake);
    });
  }
}
