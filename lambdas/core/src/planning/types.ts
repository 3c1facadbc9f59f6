import type { KeyType } from '../shared/algorithms';

/** What the cluster can generate: measured keygen throughput, shared by all key types. */
export interface KeygenCapacity {
  readonly hsmCount: number;
  /** Keys per second one HSM generates of each key type when all its keygen sessions work on that type. */
  readonly keysPerSecondPerHsm: Partial<Record<KeyType, number>>;
  /**
   * Per forecast bucket, the fraction (0..1) of the cluster's keygen throughput free for generation, e.g.
   * what the forecast request load leaves; default 1. Buckets past the array's end count as 1.
   */
  readonly generationShare?: readonly number[];
}

export interface PlanOptions {
  /** Upper bound of the pool per key type (or one for all); the target never exceeds it. Default: none. */
  readonly maxPoolSize?: number | Partial<Record<KeyType, number>>;
  /** Hours of day (0-23, local time) in which generation is paused. */
  readonly pausedHoursOfDay?: readonly number[];
  /** Generation is paused in buckets whose upper forecast (all key types) reaches this many requests. */
  readonly pauseAtRequestsPerBucket?: number;
  readonly timeZoneOffsetMinutes?: number;
  /** Largest extra-HSM count tried when the plan is infeasible; default 64. */
  readonly maxExtraHsms?: number;
}

export interface KeyTypePlan {
  /** Keys the mean forecast asks for over the horizon. */
  readonly demand: number;
  /**
   * The fluid bound on the mean forecast: max over t of cumulative demand minus cumulative generation
   * capacity up to t (capacity shared between key types), floored at 0: the stock needed now.
   */
  readonly fluidBound: number;
  /** Extra stock for the upper forecast quantile, not counting this bucket's generation. */
  readonly safetyStock: number;
  /** Pool level to keep now (fluidBound + safetyStock, capped by maxPoolSize). */
  readonly target: number;
  /** True when maxPoolSize cut the target. */
  readonly capped: boolean;
  /** Keys that will be missing at the worst point even generating at full capacity from now on. */
  readonly shortfall: number;
}

export interface GenerationWindow {
  /** Epoch ms, inclusive. */
  readonly start: number;
  /** Epoch ms, exclusive. */
  readonly end: number;
}

export type PlanWarningKind = 'peak-unreachable' | 'target-capped';

export interface PlanWarning {
  readonly kind: PlanWarningKind;
  readonly keyType: KeyType;
  readonly message: string;
  readonly shortfall: number;
  /** First bucket (index and epoch ms) at which the pool runs dry. */
  readonly peakBucket: number;
  readonly peakAt: number;
  /** Extra HSMs that close the gap; null when none up to maxExtraHsms (or a cap, not capacity, is at fault). */
  readonly extraHsms: number | null;
}

export interface Plan {
  readonly start: number;
  readonly bucketMs: number;
  /** Per forecast bucket: may the keygen function generate? */
  readonly generationAllowed: readonly boolean[];
  /** The allowed buckets merged into windows. */
  readonly generationWindows: readonly GenerationWindow[];
  readonly keyTypes: Partial<Record<KeyType, KeyTypePlan>>;
  readonly warnings: readonly PlanWarning[];
}
