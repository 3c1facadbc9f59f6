import type { LatencySummary } from './types';

/**
 * Piecewise-linear bins: 0.1 ms up to 1 s, 10 ms up to 100 s, 10 s up to ~28 h, 1 min up to ~12 days,
 * one overflow bin.
 * Millions of requests in ~240 KB, no logarithm on the hot path; count, mean and max are exact.
 */
const FINE = 10_000; // [0, 1000) ms in 0.1 ms
const MID = 9_900; // [1000, 100000) ms in 10 ms
const COARSE = 9_990; // [1e5, 1e8) ms in 10 s
const HOURS = 15_000; // [1e8, 1e9) ms in 60 s
const BINS = FINE + MID + COARSE + HOURS + 1;

function binOf(ms: number): number {
  if (ms < 1000) return ms <= 0 ? 0 : (ms * 10) | 0;
  if (ms < 100_000) return FINE + (((ms - 1000) / 10) | 0);
  if (ms < 1e8) return FINE + MID + Math.floor((ms - 100_000) / 10_000);
  const b = FINE + MID + COARSE + Math.floor((ms - 1e8) / 60_000);
  return b < BINS - 1 ? b : BINS - 1;
}

/** Upper edge of a bin. */
function edgeOf(bin: number): number {
  if (bin < FINE) return (bin + 1) / 10;
  if (bin < FINE + MID) return 1000 + (bin - FINE + 1) * 10;
  if (bin < FINE + MID + COARSE) return 100_000 + (bin - FINE - MID + 1) * 10_000;
  if (bin < BINS - 1) return 1e8 + (bin - FINE - MID - COARSE + 1) * 60_000;
  return Infinity; // overflow: the percentile is then the exact max
}

export class LatencyHistogram {
  private readonly bins = new Float64Array(BINS);
  private count = 0;
  private sum = 0;
  private max = 0;

  public add(ms: number): void {
    this.bins[binOf(ms)]++;
    this.count++;
    this.sum += ms;
    if (ms > this.max) this.max = ms;
  }

  /** A histogram holding both inputs' samples. */
  public static merge(a: LatencyHistogram, b: LatencyHistogram): LatencyHistogram {
    const out = new LatencyHistogram();
    for (let i = 0; i < BINS; i++) out.bins[i] = a.bins[i] + b.bins[i];
    out.count = a.count + b.count;
    out.sum = a.sum + b.sum;
    out.max = Math.max(a.max, b.max);
    return out;
  }

  /** Upper edge of the bin holding the p-th percentile (nearest rank), never above the exact max. */
  public percentile(p: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.max(1, Math.ceil((p / 100) * this.count));
    let seen = 0;
    for (let b = 0; b < BINS; b++) {
      seen += this.bins[b];
      if (seen >= rank) return Math.min(this.max, edgeOf(b));
    }
    return this.max;
  }

  public summary(): LatencySummary {
    return {
      count: this.count,
      p50: this.percentile(50),
      p99: this.percentile(99),
      max: this.count ? this.max : NaN,
      mean: this.count ? this.sum / this.count : NaN,
    };
  }
}
