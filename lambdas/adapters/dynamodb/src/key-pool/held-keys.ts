/**
 * Keys of bundles this process claimed and has not handed out yet, per type, oldest first. Each is handed
 * out once; keys held by a process that ends unused are lost to the pool (never served twice).
 */
import type { KeyType } from '@pipeline/core/shared';
import type { PoolKey } from '@pipeline/core/pool';

export class HeldKeys {
  private readonly held = new Map<KeyType, PoolKey[]>();

  public hold(keyType: KeyType, keys: readonly PoolKey[]): void {
    const held = this.held.get(keyType) ?? [];
    held.push(...keys);
    this.held.set(keyType, held);
  }

  /** The oldest held key still usable at nowSeconds; expired ones are dropped (they were never served). */
  public take(keyType: KeyType, nowSeconds: number): PoolKey | undefined {
    const held = this.held.get(keyType);
    for (let key = held?.shift(); key; key = held?.shift()) if (key.expiresAt > nowSeconds) return key;
    return undefined;
  }

  /** Held keys of the type (unexpired or not). */
  public count(keyType: KeyType): number {
    return this.held.get(keyType)?.length ?? 0;
  }
}
