/**
 * Prefetching claims: when a signer takes a pool key it immediately claims the next one of that type in
 * the background, so the table round trip of the next request overlaps this request's HSM and CA work
 * instead of adding to its latency.
 *
 * Why it is safe: a prefetched key is already claimed (deleted from the table), so it is held by this
 * process alone and still used at most once. If the process dies holding it, that one key is simply
 * lost, never reused. At most one key per key type is held per process; an expired one is dropped.
 */
import type { KeyType } from '../shared/algorithms';
import { isKeyUsable, type KeyPoolStore, type PoolKey } from './pool';

export class PrefetchingKeyClaimer implements Pick<KeyPoolStore, 'claim'> {
  private readonly next = new Map<KeyType, Promise<PoolKey | undefined>>();

  public constructor(
    private readonly pool: Pick<KeyPoolStore, 'claim'>,
    /** Epoch seconds, for the background claim. */
    private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  public async claim(keyType: KeyType, nowSeconds: number): Promise<PoolKey | undefined> {
    const held = this.next.get(keyType);
    this.next.delete(keyType);
    let key = held ? await held : undefined;
    if (key && !isKeyUsable(key, nowSeconds)) key = undefined;
    key ??= await this.pool.claim(keyType, nowSeconds);
    // Only while the pool still gives keys: an empty pool is not polled in the background.
    if (key) this.prefetch(keyType);
    return key;
  }

  /** Whether a key of the type is held or on its way (for tests and the health figures). */
  public holds(keyType: KeyType): boolean {
    return this.next.has(keyType);
  }

  /** Waits for background claims in flight (e.g. before a process stops, or in tests). */
  public async settled(): Promise<void> {
    await Promise.all(this.next.values());
  }

  private prefetch(keyType: KeyType): void {
    if (this.next.has(keyType)) return;
    // A failed background claim is not an error of any request: the next request claims directly.
    this.next.set(
      keyType,
      this.pool.claim(keyType, this.nowSeconds()).catch(() => undefined),
    );
  }
}
