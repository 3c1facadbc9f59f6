/**
 * The e2e report's per-second timeline: for each second of a run, the requests sent and completed, the
 * p50/p99 of those completed in it, and what else happened then (markers): scheduled functions
 * (keygen, CRL publication, audit checkpoints, reconcile), garbage collections of the runner, the
 * consumers and the stand-ins' JVMs. Seconds whose p99 is far above the run's are listed as stalls with
 * their markers, so a jump in latency can be matched with its cause.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Outcome } from './load';
import { percentile, round } from './stats';

export interface Marker {
  /** Epoch milliseconds (the end of a collection, the start of a scheduled run). */
  readonly at: number;
  /** What it was: `keygen`, `crl`, `audit-checkpoint`, `reconcile`, `gc runner`, `gc consumer`, `gc DynamoDB Local`... */
  readonly what: string;
  readonly ms: number;
}

export interface Second extends Record<string, string | number> {
  readonly s: number;
  readonly sent: number;
  readonly done: number;
  readonly p50: number;
  readonly p99: number;
  /** Medians of the completed requests' stages: the API's part, the wait in the queue, the CA call. */
  readonly 'api p50': number;
  readonly 'queue p50': number;
  readonly 'ca p50': number;
  readonly markers: string;
}

/** A stage's duration from an outcome's record timings (see e2e-run.ts `breakdown`), or undefined. */
function stageOf(o: Outcome, stage: 'api' | 'queue' | 'ca'): number | undefined {
  const t = o.view?.timings;
  if (!o.ok || !t) return undefined;
  const received = Date.parse(String(t.receivedAt));
  const started = Date.parse(String(t.startedAt));
  const finished = Date.parse(String(t.finishedAt));
  if (stage === 'api') return o.latencyMs - (finished - received);
  if (stage === 'queue') return started - received;
  return t.stageMs?.issue;
}

function medianOf(values: ReadonlyArray<number | undefined>): number {
  const xs = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  return xs.length ? round(percentile(xs, 50), 0) : 0;
}

/** Markers of one kind in one second, summed: `gc runner 3x 41ms`, `keygen 120ms`. */
function describe(markers: readonly Marker[]): string {
  const byWhat = new Map<string, { n: number; ms: number }>();
  for (const m of markers) {
    const e = byWhat.get(m.what) ?? { n: 0, ms: 0 };
    byWhat.set(m.what, { n: e.n + 1, ms: e.ms + m.ms });
  }
  return [...byWhat]
    .map(([what, { n, ms }]) => `${what} ${n > 1 ? `${n}x ` : ''}${Math.round(ms)}ms`)
    .join(', ');
}

/** Seconds from `startEpochMs`: outcomes by completion second, markers by their second. */
export function timeline(
  outcomes: readonly Outcome[],
  markers: readonly Marker[],
  startEpochMs: number,
): Second[] {
  const end = Math.max(0, ...outcomes.map((o) => o.sentAt + o.latencyMs));
  const seconds: Second[] = [];
  for (let s = 0; s * 1000 < end; s++) {
    const done = outcomes.filter((o) => Math.floor((o.sentAt + o.latencyMs) / 1000) === s);
    const latencies = done.map((o) => o.latencyMs);
    const here = markers.filter((m) => Math.floor((m.at - startEpochMs) / 1000) === s);
    seconds.push({
      s,
      sent: outcomes.filter((o) => Math.floor(o.sentAt / 1000) === s).length,
      done: done.length,
      p50: latencies.length ? round(percentile(latencies, 50), 0) : 0,
      p99: latencies.length ? round(percentile(latencies, 99), 0) : 0,
      'api p50': medianOf(done.map((o) => stageOf(o, 'api'))),
      'queue p50': medianOf(done.map((o) => stageOf(o, 'queue'))),
      'ca p50': medianOf(done.map((o) => stageOf(o, 'ca'))),
      markers: describe(here),
    });
  }
  return seconds;
}

/** Seconds whose p99 exceeds both `boundMs` and twice the run's median latency. */
export function stalls(seconds: readonly Second[], runP50: number, boundMs = 300): Second[] {
  return seconds.filter((s) => s.p99 > boundMs && s.p99 > 2 * runP50);
}

/** The JVM option that makes each stand-in log its collections (wall-clock time) into `dir`. */
export function jvmGcLogOptions(dir: string): string {
  return `-Xlog:gc:file=${join(dir, 'jvm-gc-%p.log')}:time`;
}

/**
 * The JVMs' pauses from their logs: `[2026-11-25T08:45:00.123+0000] GC(3) Pause Young ... 3.456ms`;
 * `names` maps a pid to the stand-in it is (from /proc), others are `gc JVM`.
 */
export function jvmGcMarkers(dir: string, names: ReadonlyMap<number, string>): Marker[] {
  const out: Marker[] = [];
  for (const file of readdirSync(dir).filter((f) => /^jvm-gc-\d+\.log$/.test(f))) {
    const pid = Number(/(\d+)/.exec(file)![1]);
    const what = `gc ${names.get(pid) ?? 'JVM'}`;
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      const m = /^\[([^\]]+)\].*\bPause\b.* ([\d.]+)ms$/.exec(line);
      if (m) out.push({ at: Date.parse(m[1].replace(/(\+\d\d)(\d\d)$/, '$1:$2')), what, ms: Number(m[2]) });
    }
  }
  return out;
}
