/**
 * Garbage-collection markers for the benchmarks' timeline: with LOCAL_GC_MARKERS=1 a runner process
 * reports each collection of at least 2 ms as a `gc-marker {...}` line (when it ended, how long it took,
 * which kind). Minor scavenges below that are too many and too short to explain a stall.
 */
import { PerformanceObserver, constants } from 'node:perf_hooks';

export interface GcMarker {
  /** Epoch milliseconds when the collection ended. */
  readonly at: number;
  readonly ms: number;
  readonly kind: 'minor' | 'major' | 'incremental' | 'weak' | 'other';
}

const KINDS: Record<number, GcMarker['kind']> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak',
};

export const GC_MARKER_PREFIX = 'gc-marker ';

/** Calls `report` for each collection of at least `minMs`; returns the function that stops observing. */
export function observeGc(report: (marker: GcMarker) => void, minMs = 2): () => void {
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.duration < minMs) continue;
      const kind = KINDS[(entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
      report({
        at: Math.round(performance.timeOrigin + entry.startTime + entry.duration),
        ms: entry.duration,
        kind,
      });
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}

/** In a child process of the runner: markers as lines on stderr when LOCAL_GC_MARKERS=1. */
export function printGcMarkers(): void {
  if (process.env.LOCAL_GC_MARKERS !== '1') return;
  observeGc((m) => console.error(`${GC_MARKER_PREFIX}${JSON.stringify(m)}`));
}
