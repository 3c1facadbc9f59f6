import type { KnownEvent } from '@pipeline/core/forecast';

/** Timings of one HSM (ms per operation on one session) and how many sessions work in parallel. */
export interface HsmTimings {
  readonly name: string;
  readonly keygenMs: number;
  readonly unwrapMs: number;
  readonly signMs: number;
  /** Taking one wrapped key from the database. */
  readonly dbLoadMs: number;
  /** Wrapping a fresh key and saving it (part of each pool keygen job). */
  readonly wrapSaveMs: number;
  /** Operations one HSM runs in parallel (sessions doing work at the same time). */
  readonly sessionsPerHsm: number;
  /** Where the figures come from. */
  readonly source: string;
}

/** Pulls the next arrival time (ms from the start), or -1 when the workload is over. */
export type ArrivalSource = () => number;

export interface Workload {
  readonly name: string;
  readonly description: string;
  /** Epoch ms of simulated time 0: a Monday 00:00 UTC, so hour-of-week is slot % 168. */
  readonly epoch: number;
  readonly durationMs: number;
  /** A fresh arrival stream (same seed, same stream). */
  readonly arrivals: () => ArrivalSource;
  /** Expected arrival rate (requests/s) per hour, for charts and checks. */
  readonly hourlyRates: Float64Array;
  /** Hours whose requests have the peak target (3000 ms); the others have the normal one (300 ms). */
  readonly peakHours: Uint8Array;
  /** Hourly counts of whole weeks before time 0: the history a forecaster has on day one. */
  readonly history: readonly number[];
  /** Events an operator would configure (e.g. the filing deadline week). */
  readonly events: readonly KnownEvent[];
  /** Keys in the pool at time 0 unless overridden. */
  readonly initialPool: number;
}

export type PolicyName = 'no-pool' | 'fill-max' | 'forecast';

/** What a keygen policy knows at the start of each hour. */
export interface SlotContext {
  readonly slot: number;
  readonly pool: number;
  readonly hsmCount: number;
  readonly workers: number;
  readonly timings: HsmTimings;
  readonly workload: Workload;
  /** Arrivals per hour so far; entries for slots >= slot are not yet known (zero). */
  readonly observed: Float64Array;
}

export interface SlotDecision {
  /** Sessions (of the whole cluster) reserved for key generation in this hour. */
  readonly keygenSessions: number;
  /** Generation stops when the pool reaches this level. */
  readonly target: number;
}

export interface Policy {
  readonly name: PolicyName;
  readonly usesPool: boolean;
  /** The pool this policy would have at time 0 in its steady state (overrides the workload's). */
  readonly initialPool?: number;
  decide(context: SlotContext): SlotDecision;
  /** What the policy's planner warned about during the run (first occurrence of each kind). */
  notes?(): readonly string[];
}

export interface LatencySummary {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Time series at a fixed step for the chart. */
export interface Series {
  readonly stepMs: number;
  readonly arrivals: Float64Array;
  readonly pool: Float64Array;
  readonly maxLatency: Float64Array;
}

export interface SimulationResult {
  readonly policy: PolicyName;
  /** Stopped early by EngineConfig.abort: the latency figures cover only the requests simulated. */
  readonly aborted: boolean;
  readonly hsmCount: number;
  readonly workers: number;
  readonly served: number;
  readonly latency: LatencySummary;
  readonly peakLatency: LatencySummary;
  readonly normalLatency: LatencySummary;
  readonly over300: number;
  readonly over3000: number;
  readonly poolMisses: number;
  readonly keysGenerated: number;
  readonly peakStoredKeys: number;
  readonly meanStoredKeys: number;
  readonly busyFraction: number;
  readonly simulatedMs: number;
  readonly series: Series;
  /** Per-request times, only when asked for (tests). */
  readonly trace?: { arrival: Float64Array; start: Float64Array; finish: Float64Array };
}
