/**
 * Per-process candidate hints (bundle coordinates only), shared by the process's concurrent claims: a
 * query returns a few candidates, one claim takes the first and the others serve the next claims without
 * a query. Hints are only hints: a stale one costs one failed conditional delete, never a second use of
 * a key.
 */
import { shuffle } from '@pipeline/core/pool';
import type { KeyType } from '@pipeline/core/shared';
import type { Candidate } from './layout';

interface Hint extends Candidate {
  cachedAt: number;
  taken: boolean;
}

export class CandidateCache {
  private readonly hints = new Map<KeyType, Map<string, Hint>>();

  public constructor(
    /** How long a hint is trusted before it is dropped unused (ms). */
    private readonly ttlMs: number,
    private readonly random: () => number,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Adds query results, shuffled so processes try them in different orders. A bundle already known (even
   * one taken by a concurrent claim here) is not added again: within one process, no two claims ever race
   * for the same bundle.
   */
  public remember(keyType: KeyType, found: readonly Candidate[]): void {
    const hints = this.hints.get(keyType) ?? new Map<string, Hint>();
    const cachedAt = this.clock();
    for (const c of shuffle([...found], this.random)) {
      if (!hints.has(c.sk)) hints.set(c.sk, { pk: c.pk, sk: c.sk, cachedAt, taken: false });
    }
    this.hints.set(keyType, hints);
  }

  /** A fresh candidate no claim of this process has tried yet (it is marked taken at once). */
  public take(keyType: KeyType): Candidate | undefined {
    const hints = this.hints.get(keyType);
    if (!hints) return undefined;
    const now = this.clock();
    for (const [sk, hint] of hints) {
      if (now - hint.cachedAt > this.ttlMs) hints.delete(sk);
      else if (!hint.taken) {
        hint.taken = true;
        return hint;
      }
    }
    return undefined;
  }
}
