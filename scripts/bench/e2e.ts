/**
 * `npm run bench -- e2e <ramp | steady --rate R --seconds S | max [--rates 20,40,...]> [--key-type T] [--profile P]
 *   [--identity assertion|trusted-client|both] [--warmup S] [--no-counts | --counts-only] [--cpu-prof DIR] [--url URL] [--persist]`
 * The full local pipeline driven over HTTP by an open-loop load generator, once per identity mode. Each
 * measurement is a fresh pipeline in a child process (e2e-run.ts) that fills the pool, warms up for
 * --warmup seconds and then measures, with no proxy in the way; the per-request counts (calls, item
 * operations, CA invocations) come from a second run of the same workload behind the counting proxy.
 * With --url it measures a running pipeline instead (no counts, no markers). --counts-only runs the
 * counting run alone: the counts, and latency with the proxy in the way.
 */
import { fork } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ADES_PROFILES, isKeyType, KEY_TYPES, type AdesProfile } from '@pipeline/core/shared';
import { chargeToOwnCode, summarizeProfile } from './cpu-profile';
import { warmupRate, type E2eArgs, type E2eJob, type IdentityMode, type WorkloadResult } from './e2e-run';
import { rampArrivals, steadyArrivals, type Arrival } from './load';
import { finish, option, printTable, type Row } from './report';
import { round } from './stats';
import { stalls, type Second } from './timeline';

const USAGE =
  'usage: npm run bench -- e2e <ramp|steady|max> [--rate R --seconds S] [--rates R1,R2,...] [--key-type T] [--profile CAdES-B-B|PAdES-B-B] ' +
  '[--identity assertion|trusted-client|both] [--warmup S] [--no-counts | --counts-only] [--cpu-prof DIR] [--url URL] [--persist]';

function parseArgs(args: string[]): E2eArgs {
  const get = (name: string): string | undefined => option(args, name);
  const workload = args[0];
  if (workload !== 'ramp' && workload !== 'steady' && workload !== 'max') throw new Error(USAGE);
  const keyType = get('key-type') ?? (workload === 'max' ? 'EC-P256' : 'RSA-2048');
  if (!isKeyType(keyType)) throw new Error(`--key-type must be one of ${KEY_TYPES.join(', ')}`);
  const profile = get('profile');
  if (profile !== undefined && !(ADES_PROFILES as readonly string[]).includes(profile))
    throw new Error(`--profile must be one of ${ADES_PROFILES.join(', ')}`);
  // A running pipeline (--url) has one identity mode: the one named, by default the default.
  const identity = get('identity') ?? (workload === 'max' || get('url') ? 'assertion' : 'both');
  if (!['assertion', 'trusted-client', 'both'].includes(identity)) throw new Error(USAGE);
  if (get('url') && identity === 'both')
    throw new Error('with --url, --identity names the mode of that pipeline');
  return {
    workload,
    rate: Number(get('rate') ?? 50),
    seconds: Number(get('seconds') ?? (workload === 'max' ? 60 : 30)),
    keyType,
    ...(profile ? { profile: profile as AdesProfile } : {}),
    url: get('url'),
    persist: args.includes('--persist'),
    rates: (get('rates') ?? '20,40,60,80,100,120,150,200').split(',').map(Number),
    identities: identity === 'both' ? ['assertion', 'trusted-client'] : [identity as IdentityMode],
    warmupSeconds: Number(get('warmup') ?? 10),
    counts: !args.includes('--no-counts') && !get('url') && workload !== 'max',
    countsOnly: args.includes('--counts-only'),
    profileDir: get('cpu-prof'),
  };
}

function printTimeline(title: string, seconds: readonly Second[], runP50: number): void {
  printTable(`${title}: per second of completion (markers: scheduled runs, collections >= 2 ms)`, [
    ...seconds,
  ]);
  const slow = stalls(seconds, runP50);
  console.log(
    slow.length === 0
      ? 'no stalls (no second with p99 > 300 ms and > 2x the run median)'
      : `stalls: ${slow.map((s) => `${s.s}s p99 ${s.p99} [${s.markers || 'no marker'}]`).join('; ')}`,
  );
}

function printProfiles(dir: string | undefined, identity: IdentityMode): Record<string, unknown> | undefined {
  if (!dir || !existsSync(dir)) return undefined;
  const out: Record<string, unknown> = {};
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const path = join(dir, file);
    const name = file.startsWith('runner') ? 'runner' : `child ${file.split('.')[3] ?? file}`;
    const summary = summarizeProfile(path, 12);
    const ownCode = chargeToOwnCode(path, 12);
    out[name] = { ...summary, ownCode };
    console.log(`\nCPU profile (${identity}), ${name}: busy ${summary.busyMs} ms; ${path}`);
    for (const a of summary.byArea) console.log(`  ${String(a.share).padStart(5)}%  ${a.area}`);
    console.log('  by our function below each sample (ms):');
    for (const f of ownCode) console.log(`  ${String(f.ms).padStart(7)}  ${f.fn}`);
  }
  return out;
}

/** Runs one job in a fresh process (e2e-run.ts) and returns its figures. */
function inChild<T>(job: E2eJob): Promise<T> {
  const child = fork(join(__dirname, 'e2e-run.ts'), [], { execArgv: ['--import', 'tsx'] });
  return new Promise<T>((resolve, reject) => {
    child.once('message', (m: { result?: T; error?: string }) =>
      m.error === undefined ? resolve(m.result as T) : reject(new Error(`e2e run failed: ${m.error}`)),
    );
    child.once('exit', (code) => code !== 0 && reject(new Error(`e2e run exited with code ${code}`)));
    child.send(job);
  });
}

type Measured = WorkloadResult & { identity: IdentityMode; warmup: Record<string, number> };

async function measureIdentity(
  args: E2eArgs,
  identity: IdentityMode,
  arrivals: Arrival[],
  keysNeeded: number,
) {
  const profileDir = args.profileDir ? join(args.profileDir, identity) : undefined;
  // The counting run: counts, and latency with the proxy in the way.
  const countingRun = async () => {
    const counted = await inChild<Measured>({
      kind: 'workload',
      args,
      identity,
      counting: true,
      arrivals,
      keysNeeded,
    });
    return {
      counted,
      counts: { ...(counted.counts as Record<string, unknown>), latencyWithProxy: counted.overall },
    };
  };
  if (args.countsOnly && args.counts) {
    const { counted, counts } = await countingRun();
    return { ...counted, counts, profiles: undefined };
  }
  const latency = await inChild<Measured>({
    kind: 'workload',
    args: { ...args, profileDir },
    identity,
    counting: false,
    arrivals,
    keysNeeded,
  });
  const profiles = printProfiles(profileDir, identity);
  const counts = args.counts ? (await countingRun()).counts : undefined;
  return { ...latency, counts, profiles };
}

export async function run(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  const arrivals =
    args.workload === 'ramp'
      ? rampArrivals()
      : args.workload === 'steady'
        ? steadyArrivals(args.rate, args.seconds)
        : [];
  const warmupKeys = args.warmupSeconds * warmupRate(args);
  // max: keys for the two fastest steps that may run; each step tops the pool up again if it runs low.
  const keysNeeded =
    args.workload === 'max'
      ? Math.ceil(Math.max(...args.rates) * args.seconds * 1.1 + warmupKeys)
      : Math.ceil((arrivals.length + warmupKeys) * 1.05);
  if (args.workload === 'max') return runMax(args, keysNeeded);
  const runs = [];
  for (const identity of args.identities) {
    const r = await measureIdentity(args, identity, arrivals, keysNeeded);
    runs.push(r);
    printTable(
      `e2e ${args.workload}, ${args.keyType}, ${args.profile ? `${args.profile} at B-LT` : 'raw'}, ${identity}, open loop, client latency ms (${args.countsOnly ? 'behind the counting proxy' : 'no proxy'})`,
      [...r.phases, r.overall],
    );
    console.log(
      `pool depth ${JSON.stringify(r.poolDepth)}; where the time goes (medians): ${JSON.stringify(r.breakdownMedianMs)}`,
    );
    console.log(
      `CPU ms per request (${args.countsOnly ? 'counting run' : 'latency run'}): ${JSON.stringify(r.cpuMsPerRequest)}; runner + consumers ${r.cpuMsPerRequestRunnerAndConsumers}`,
    );
    console.log(`machine while measuring (% of all cores): ${JSON.stringify(r.machine)}`);
    if (r.counts) console.log(`per request (counting run): ${JSON.stringify(r.counts)}`);
    if (r.timeline) printTimeline(`timeline, ${identity}`, r.timeline, r.overall.p50);
  }
  if (runs.length > 1) {
    const [a, b] = runs;
    printTable(
      `identity modes, ${args.workload}, ${args.keyType}`,
      runs.map((r) => ({
        identity: r.identity,
        'achieved/s': r.overall['achieved/s'],
        p50: r.overall.p50,
        p99: r.overall.p99,
        'CPU ms/request (runner+consumers)': r.cpuMsPerRequestRunnerAndConsumers,
      })),
    );
    console.log(
      `p50 ratio ${round(a.overall.p50 / b.overall.p50, 2)}, p99 ratio ${round(a.overall.p99 / b.overall.p99, 2)}`,
    );
  }
  finish(`e2e-${args.workload}`, { keyType: args.keyType, warmupSeconds: args.warmupSeconds, runs });
}

/**
 * max: step the rate up until a step fails (p99 > 300 ms or any error), then bisect between the last pass
 * and the first failure until they are within 10% (at least 2/s) or after 3 more steps. No proxy, no
 * counting run; one warm-up before the first step.
 */
async function runMax(args: E2eArgs, keysNeeded: number): Promise<void> {
  const runs = [];
  for (const identity of args.identities) {
    const r = await inChild<{ steps: Row[]; maxSustainedRate: number }>({
      kind: 'max',
      args,
      identity,
      keysNeeded,
    });
    printTable(
      `e2e max, ${args.keyType}, ${identity}, ${args.seconds} s per step, pass = p99 <= 300 ms and no errors`,
      r.steps,
    );
    runs.push(r);
  }
  finish('e2e-max', { keyType: args.keyType, secondsPerStep: args.seconds, runs });
}
