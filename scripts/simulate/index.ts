/**
 * `npm run simulate -- [options]`: the capacity simulator. Runs each keygen policy on a workload with HSM
 * timings, searches the smallest HSM count meeting 300 ms and 3000 ms (p99), prints a table, writes a
 * PNG chart, and prints one JSON summary as the last line.
 */
import { parseArgs, SimulateArgumentError, USAGE, type SimulateArgs } from './cli-args';
import { chartSvg, writePng } from './chart';
import { simulate } from './engine';
import { fillToMaximum, forecastDriven, noPool } from './policies';
import { onTheFlyServiceMs, pooledServiceMs } from './presets';
import { cached, minHsmsFor } from './search';
import type { Policy, PolicyName, SimulationResult, Workload } from './types';
import { WORKLOADS, taxWeek } from './workloads';

function policyOf(name: PolicyName, args: SimulateArgs): Policy {
  if (name === 'no-pool') return noPool();
  if (name === 'fill-max') return fillToMaximum({ maxPool: args.maxPool, sessionShare: args.fillShare });
  return forecastDriven({
    horizonDays: args.horizonDays,
    maxPool: args.maxPool,
    maxUtilization: args.maxUtilization,
    quantile: args.quantile,
  });
}

interface PolicyReport {
  readonly result: SimulationResult;
  readonly notes: readonly string[];
  readonly minHsms300: number | null;
  readonly minHsms3000: number | null;
  readonly searchRuns: number;
}

function report(name: PolicyName, workload: Workload, args: SimulateArgs): PolicyReport {
  let runs = 0;
  let notes: readonly string[] = [];
  // p99 fails once more than 1% of the requests are over the target; the workload's expected count
  // (plus a margin for Poisson noise) bounds that without waiting for the end.
  const expected = workload.hourlyRates.reduce((a, r) => a + r * 3600, 0);
  const run = cached((hsms, abortAboveMs) => {
    runs++;
    const policy = policyOf(name, args);
    const r = simulate({
      timings: args.timings,
      hsmCount: hsms,
      workload,
      policy,
      initialPool: args.initialPool,
      abort:
        abortAboveMs === undefined ? undefined : { targetMs: abortAboveMs, maxOver: expected * 0.0102 + 100 },
    });
    // Planner warnings of the run the table shows.
    if (hsms === args.hsms && !r.aborted) notes = policy.notes?.() ?? [];
    return r;
  });
  const result = run(args.hsms);
  // A request can never be faster than its own service time: skip hopeless searches.
  const t = args.timings;
  const serviceMs = name === 'no-pool' ? onTheFlyServiceMs(t) : pooledServiceMs(t);
  // Lower bound: the busiest hour's rate must not exceed what the sessions can serve.
  const peakRate = workload.hourlyRates.reduce((a, r) => Math.max(a, r), 0);
  const from = Math.max(1, Math.ceil((peakRate * serviceMs) / 1000 / t.sessionsPerHsm));
  const search = (target: number): number | null =>
    !args.search || serviceMs > target ? null : minHsmsFor(target, run, args.maxHsms, from);
  const minHsms300 = search(300);
  const minHsms3000 = search(3000);
  return { result, notes, minHsms300, minHsms3000, searchRuns: runs };
}

const fmtMs = (ms: number): string => {
  if (!Number.isFinite(ms)) return '-';
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${(ms / 60_000).toFixed(0)} min`;
  return `${(ms / 3_600_000).toFixed(0)} h`;
};
const fmtInt = (n: number): string => Math.round(n).toLocaleString('en-US');

function table(reports: readonly PolicyReport[], searched: boolean): string {
  const head = [
    'policy',
    'HSMs',
    'served',
    'p50',
    'p99',
    'max',
    'peak-hour p99',
    '> 300 ms',
    '> 3000 ms',
    'pool misses',
    'peak stored keys',
    'mean stored keys',
    'HSM busy',
    'min HSMs 300 ms',
    'min HSMs 3000 ms',
  ];
  const na = (v: number | null): string => (v === null ? (searched ? 'none' : '-') : String(v));
  const rows = reports.map(({ result: r, minHsms300, minHsms3000 }) => [
    r.policy,
    String(r.hsmCount),
    fmtInt(r.served),
    fmtMs(r.latency.p50),
    fmtMs(r.latency.p99),
    fmtMs(r.latency.max),
    fmtMs(r.peakLatency.p99),
    fmtInt(r.over300),
    fmtInt(r.over3000),
    fmtInt(r.poolMisses),
    fmtInt(r.peakStoredKeys),
    fmtInt(r.meanStoredKeys),
    `${(r.busyFraction * 100).toFixed(1)}%`,
    na(minHsms300),
    na(minHsms3000),
  ]);
  const lines = [head, head.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const make = WORKLOADS[args.workload];
  if (!make)
    throw new SimulateArgumentError(`--workload must be one of ${Object.keys(WORKLOADS).join(', ')}`);
  const workload =
    args.workload === 'tax-week'
      ? taxWeek({ seed: args.seed, leadInDays: args.leadInDays })
      : make(args.seed);
  const t = args.timings;
  console.log(`workload: ${workload.description}`);
  console.log(
    `HSM: ${t.name} keygen ${t.keygenMs} ms, unwrap ${t.unwrapMs}, sign ${t.signMs}, DB load ${t.dbLoadMs}, ` +
      `wrap+save ${t.wrapSaveMs}, ${t.sessionsPerHsm} sessions/HSM; per request ${pooledServiceMs(t).toFixed(2)} ms ` +
      `pooled, ${onTheFlyServiceMs(t).toFixed(0)} ms on the fly (${t.source})`,
  );
  const started = Date.now();
  const reports: PolicyReport[] = [];
  for (const name of args.policies) {
    const r = report(name, workload, args);
    console.log(`  ${name}: ${r.searchRuns} run(s), ${((Date.now() - started) / 1000).toFixed(1)} s so far`);
    reports.push(r);
  }
  console.log('');
  console.log(table(reports, args.search));
  for (const r of reports) for (const note of r.notes) console.log(`${r.result.policy} planner: ${note}`);
  const svg = chartSvg(
    workload,
    reports.map((r) => r.result),
    `${workload.name}: ${t.name} timings, ${args.hsms} HSM(s), ${t.sessionsPerHsm} sessions each`,
  );
  await writePng(svg, args.chart);
  console.log(`\nchart: ${args.chart}`);
  const summary = {
    workload: workload.name,
    description: workload.description,
    timings: t,
    hsms: args.hsms,
    options: {
      maxPool: args.maxPool,
      fillShare: args.fillShare,
      horizonDays: args.horizonDays,
      maxUtilization: args.maxUtilization,
      quantile: args.quantile,
      seed: args.seed,
    },
    policies: reports.map(({ result: r, notes, minHsms300, minHsms3000 }) => ({
      policy: r.policy,
      plannerWarnings: notes,
      served: r.served,
      latencyMs: { p50: r.latency.p50, p99: r.latency.p99, max: r.latency.max, mean: r.latency.mean },
      peakHourLatencyMs: { p99: r.peakLatency.p99, max: r.peakLatency.max },
      over300ms: r.over300,
      over3000ms: r.over3000,
      poolMisses: r.poolMisses,
      keysGenerated: Math.round(r.keysGenerated),
      peakStoredKeys: Math.round(r.peakStoredKeys),
      meanStoredKeys: Math.round(r.meanStoredKeys),
      busyFraction: r.busyFraction,
      minHsms300ms: minHsms300,
      minHsms3000ms: minHsms3000,
    })),
    chart: args.chart,
    elapsedMs: Date.now() - started,
  };
  console.log(JSON.stringify(summary));
}

main().catch((err: Error) => {
  if (err instanceof SimulateArgumentError) {
    console.error(err.message === USAGE ? USAGE : `${err.message}\n${USAGE}`);
    process.exit(2);
  }
  console.error(`simulate failed: ${err.name}: ${err.message}`);
  process.exit(1);
});
