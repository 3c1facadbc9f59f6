/**
 * The figures the key pool exposes, as a small port: the Powertools (EMF) adapter publishes them in
 * Lambda, the in-memory one keeps a snapshot the local health/metrics endpoint can return.
 */
import type { KeyType } from '../shared/algorithms';

/**
 * Counters: claims, on-the-fly fallbacks, rejections, requests handed back for want of a key, keys added,
 * expired keys removed.
 */
export type PoolCounterName =
  | 'KeysClaimed'
  | 'OnTheFlyFallbacks'
  | 'PoolEmptyRejections'
  | 'KeysUnavailable'
  | 'KeysAdded'
  | 'ExpiredKeysRemoved'
  | 'KeysDiscarded';

/** Gauges: the latest known value (available keys per type, from the counters). */
export type PoolGaugeName = 'KeysAvailable' | 'KeysTarget' | 'KeygenMsPerKey';

export interface PoolMetrics {
  count(name: PoolCounterName, keyType: KeyType, value?: number): void;
  gauge(name: PoolGaugeName, keyType: KeyType, value: number): void;
}

export interface PoolMetricsSnapshot {
  readonly counters: Readonly<Record<string, Readonly<Partial<Record<KeyType, number>>>>>;
  readonly gauges: Readonly<Record<string, Readonly<Partial<Record<KeyType, number>>>>>;
}

/** Keeps totals since start (counters) and the last value (gauges) per metric and key type. */
export class InMemoryPoolMetrics implements PoolMetrics {
  private readonly counters = new Map<string, Map<KeyType, number>>();
  private readonly gauges = new Map<string, Map<KeyType, number>>();

  public count(name: PoolCounterName, keyType: KeyType, value = 1): void {
    const byType = this.counters.get(name) ?? new Map<KeyType, number>();
    byType.set(keyType, (byType.get(keyType) ?? 0) + value);
    this.counters.set(name, byType);
  }

  public gauge(name: PoolGaugeName, keyType: KeyType, value: number): void {
    const byType = this.gauges.get(name) ?? new Map<KeyType, number>();
    byType.set(keyType, value);
    this.gauges.set(name, byType);
  }

  /** A plain-data copy, safe to serialise as JSON. */
  public snapshot(): PoolMetricsSnapshot {
    const plain = (m: Map<string, Map<KeyType, number>>) =>
      Object.fromEntries([...m].map(([name, byType]) => [name, Object.fromEntries(byType)]));
    return { counters: plain(this.counters), gauges: plain(this.gauges) };
  }

  public counter(name: PoolCounterName, keyType: KeyType): number {
    return this.counters.get(name)?.get(keyType) ?? 0;
  }
}
