/**
 * One measured pipeline of the e2e benchmark, in a process of its own (forked by e2e.ts for each identity
 * mode and run): the handlers wire themselves to their endpoints when first imported, so every pipeline
 * gets a fresh process. It starts the local pipeline (behind the counting proxy for a counting run, with
 * timeline markers and CPU profiles otherwise), fills the pool, warms up, runs the workload (or the `max`
 * steps) and sends the figures back over IPC.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AdesProfile, KeyType } from '@pipeline/core/shared';
import { call } from '../local/client';
import { GC_MARKER_PREFIX, observeGc, type GcMarker } from '../local/runner/gc-markers';
import { startLocalPipeline, type LocalPipeline } from '../local/runner/pipeline';
import { DEFAULT_JAVA_OPTIONS } from '../local/stand-ins';
import { useLocalHsmEnv } from '../local/token';
import { costPerMillion, PRICES } from './costs';
import type { ProxyCounts } from './counting-proxy';
import { hsmCalls, hsmLogEnd, spyOnHsm } from './hsm-spy';
import { profileThisProcess } from './cpu-profile';
import { runOpenLoopInChild, steadyArrivals, type Arrival, type Outcome } from './load';
import { cpuBetween, cpuSnapshot, machineCpu, processNames, type MachineCpu } from './process-cpu';
import type { Row } from './report';
import { median, percentile, round } from './stats';
import { jvmGcLogOptions, jvmGcMarkers, timeline, type Marker, type Second } from './timeline';

export type IdentityMode = 'assertion' | 'trusted-client';

export interface E2eArgs {
  readonly workload: 'ramp' | 'steady' | 'max';
  readonly rate: number;
  readonly seconds: number;
  readonly keyType: KeyType;
  /** `cms` requests of this profile at the default level (B-LT) instead of `raw` ones (`--profile`). */
  readonly profile?: AdesProfile;
  readonly url?: string;
  readonly persist: boolean;
  readonly rates: number[];
  /** The identity modes to measure, each on a pipeline of its own. */
  readonly identities: IdentityMode[];
  /** Seconds of load before the measured phase (not measured). */
  readonly warmupSeconds: number;
  /** A second run of the same workload behind the counting proxy, for the per-request counts. */
  readonly counts: boolean;
  /** Only the counting run (`--counts-only`): counts without the latency run, whose figures it skips. */
  readonly countsOnly?: boolean;
  /** Where CPU profiles of the runner and the consumers go (`--cpu-prof DIR`). */
  readonly profileDir?: string;
}

/** What the parent asks of one child: a workload (latency or counting run) or the `max` steps. */
export type E2eJob =
  | {
      readonly kind: 'workload';
      readonly args: E2eArgs;
      readonly identity: IdentityMode;
      readonly counting: boolean;
      readonly arrivals: Arrival[];
      readonly keysNeeded: number;
    }
  | {
      readonly kind: 'max';
      readonly args: E2eArgs;
      readonly identity: IdentityMode;
      readonly keysNeeded: number;
    };

interface Target {
  readonly url: string;
  readonly apiKey: string;
  readonly clientId: string;
  readonly identity: IdentityMode;
  readonly pipeline?: LocalPipeline;
  readonly counter?: Counter;
  readonly markers: Marker[];
  /** Where the stand-ins' JVMs log their collections (latency runs). */
  readonly jvmGcDir?: string;
  /** The pkcs11-spy log of the HSM's operations (counting runs, when the spy is installed). */
  readonly hsmLog?: string;
}

/** The counting proxy process: its IPC, as promises. */
export class Counter {
  private next = 1;
  private readonly waiting = new Map<number, (value: unknown) => void>();

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m: { id: number; value: unknown }) => {
      this.waiting.get(m.id)?.(m.value);
      this.waiting.delete(m.id);
    });
  }

  public static async start(): Promise<Counter> {
    const child = fork(join(__dirname, 'counting-proxy.ts'), [], { execArgv: ['--import', 'tsx'] });
    const counter = new Counter(child);
    await new Promise<void>((resolve) => counter.waiting.set(0, () => resolve()));
    return counter;
  }

  public async wrap(service: string, target: string): Promise<string> {
    return ((await this.ask({ add: { service, target } })) as { url: string }).url;
  }

  public async read(): Promise<ProxyCounts> {
    return (await this.ask({ read: true })) as ProxyCounts;
  }

  public stop(): void {
    this.child.kill();
  }

  private ask(message: Record<string, unknown>): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.send({ id, ...message });
    });
  }
}

async function poolDepth(url: string, apiKey: string, keyType: KeyType): Promise<number> {
  // Pool depths are for identified callers only.
  const health = await call<{ pool: Record<string, number> }>(`${url}/health`, { apiKey });
  return health.body.pool?.[keyType] ?? 0;
}

/**
 * A pipeline to measure: the one at --url, or a local one started now in `identity` mode, behind the
 * counting proxy when `counting` (whose extra hop and CPU then distort latency: counts only), with
 * markers for the timeline otherwise.
 */
async function target(
  args: E2eArgs,
  identity: IdentityMode,
  keysNeeded: number,
  counting: boolean,
): Promise<Target> {
  const markers: Marker[] = [];
  if (args.url) {
    const apiKey = process.env.LOCAL_API_KEY;
    if (!apiKey) throw new Error('with --url, set LOCAL_API_KEY to the API key of that pipeline');
    return { url: args.url, apiKey, clientId: 'default-client', identity, markers };
  }
  const counter = counting ? await Counter.start() : undefined;
  const jvmGcDir = counting ? undefined : mkdtempSync(join(tmpdir(), 'bench-jvm-gc-'));
  // This process starts one pipeline and ends: its environment needs no restoring.
  if (jvmGcDir) {
    const options = process.env.LOCAL_JAVA_OPTIONS ?? DEFAULT_JAVA_OPTIONS;
    process.env.LOCAL_JAVA_OPTIONS = `${options} ${jvmGcLogOptions(jvmGcDir)}`;
  }
  if (args.profileDir && !counting) process.env.LOCAL_CPU_PROFILE_DIR = args.profileDir;
  const hsmLog = counting ? spyOnHsm('e2e') : undefined;
  const pipeline = await startLocalPipeline({
    wrapEndpoint: counter ? (service, url) => counter.wrap(service, url) : undefined,
    persist: args.persist,
    resourcePrefix: args.persist ? 'bench-' : undefined,
    log: (line) => {
      const gc = line.indexOf(GC_MARKER_PREFIX);
      if (gc < 0) return;
      const m = JSON.parse(line.slice(gc + GC_MARKER_PREFIX.length)) as GcMarker;
      markers.push({ at: m.at, what: `gc consumer${m.kind === 'major' ? ' major' : ''}`, ms: m.ms });
    },
    keygen: false,
    onScheduledRun: (run) => markers.push({ at: run.startedAt, what: run.name, ms: run.ms }),
    env: {
      PORT: '0',
      LOG_LEVEL: 'WARN',
      LOCAL_ACCESS_LOG: '0',
      LOCAL_GC_MARKERS: counting ? '0' : '1',
      IDENTITY_MODE: identity,
      POOL_TARGETS: `${args.keyType}=${keysNeeded}`,
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      // Logins happen before a run and a run lasts minutes: tokens and logins must outlive it.
      LOCAL_IDP_ID_TOKEN_TTL_SECONDS: '3000',
      IDENTITY_MAX_AUTH_AGE_SECONDS: '3600',
    },
  });
  const started = Date.now();
  const before = await poolDepth(pipeline.url, pipeline.apiKey, args.keyType);
  if (before < keysNeeded) {
    console.log(`filling the pool: ${keysNeeded - before} ${args.keyType} keys ...`);
    await pipeline.runKeygen();
    console.log(`pool filled in ${round((Date.now() - started) / 1000, 1)} s`);
  }
  return {
    url: pipeline.url,
    apiKey: pipeline.apiKey,
    clientId: pipeline.clients[0].clientId,
    identity,
    pipeline,
    counter,
    markers,
    jvmGcDir,
    hsmLog,
  };
}

async function stopTarget(t: Target): Promise<void> {
  await t.pipeline?.stop();
  t.counter?.stop();
  if (t.jvmGcDir) rmSync(t.jvmGcDir, { recursive: true, force: true });
  if (t.hsmLog) rmSync(t.hsmLog, { force: true });
}

/** CPU ms of the processes that host the functions (runner, consumers, CA host): SoftHSM runs inside them. */
function functionsCpuMs(cpu: Record<string, number>): number {
  return Object.entries(cpu)
    .filter(([k]) => /runner|consumer|CA host/.test(k))
    .reduce((n, [, v]) => n + v, 0);
}

/** Calls, item operations, invocations and CPU per request between two snapshots. */
function perRequest(
  before: ProxyCounts,
  after: ProxyCounts,
  cpu: Record<string, number>,
  requests: number,
  hsmOps?: Record<string, number>,
): Record<string, unknown> {
  const per = (x: number): number => round(x / Math.max(1, requests), 2);
  const delta = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
    Object.fromEntries(
      Object.entries(b)
        .map(([k, v]) => [k, v - (a[k] ?? 0)])
        .filter(([, v]) => v !== 0),
    );
  const calls = delta(before.calls, after.calls);
  const total = (prefix: string): number =>
    Object.entries(calls)
      .filter(([k]) => k.startsWith(prefix))
      .reduce((n, [, v]) => n + v, 0);
  const items = after.tableItemOps - before.tableItemOps;
  const reads = after.tableReadItems - before.tableReadItems;
  const invocations = delta(before.invocations, after.invocations);
  const caInvocations = Object.entries(invocations)
    .filter(([fn]) => fn === 'ca' || fn.includes('ca'))
    .reduce((n, [, v]) => n + v, 0);
  const cpuMsPerRequest = Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, per(v)]));
  const service = Object.entries(cpu)
    .filter(([k]) => !/proxy|IdP|load generator/.test(k))
    .reduce((n, [, v]) => n + v, 0);
  const counts = {
    tableWriteItemsPerRequest: per(items - reads),
    tableReadItemsPerRequest: per(reads),
    sqsCallsPerRequest: per(total('sqs.')),
    lambdaInvocationsPerRequest: per(total('lambda.')),
    // The functions' share of the CPU: everything but the stand-ins (on AWS, managed services).
    lambdaCpuMsPerRequest: per(functionsCpuMs(cpu)),
  };
  return {
    tableOpsPerRequest: per(items),
    // By PKCS#11 function, whichever process made it (the spy's logging is in this run's CPU figures).
    ...(hsmOps
      ? {
          hsmOpsPerRequest: Object.fromEntries(
            Object.entries(hsmOps).map(([fn, n]) => [fn.slice(2), per(n)]),
          ),
        }
      : {}),
    tableCallsPerRequest: per(total('dynamodb.')),
    sdkCallsPerRequest: per(total('dynamodb.') + total('sqs.') + total('lambda.')),
    caInvocationsPerRequest: per(caInvocations),
    caItemsPerInvocation: round((after.caBatchItems - before.caBatchItems) / Math.max(1, caInvocations), 1),
    callsPerRequest: Object.fromEntries(Object.entries(calls).map(([k, v]) => [k, per(v)])),
    tableItemsPerRequest: Object.fromEntries(
      Object.entries(delta(before.tableItemsByOperation, after.tableItemsByOperation)).map(([k, v]) => [
        k,
        per(v),
      ]),
    ),
    cpuMsPerRequest,
    cpuMsPerRequestService: per(service),
    costPerMillionUsd: {
      prices: `${PRICES.region}, list prices of ${PRICES.retrieved}`,
      ...costPerMillion(counts),
    },
  };
}

export interface PhaseStats extends Row {
  phase: string;
  requests: number;
  'offered/s': number;
  'achieved/s': number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  errors: number;
  'pooled %': number;
}

/** The figures of one phase: offered and achieved rates, latency percentiles, how many did not end signed. */
export function phaseStats(phase: string, outcomes: readonly Outcome[]): PhaseStats {
  const latencies = outcomes.map((o) => o.latencyMs);
  const span = (xs: number[]): number => (Math.max(...xs) - Math.min(...xs)) / 1000;
  const scheduled = outcomes.map((o) => o.scheduledAt);
  const offered =
    outcomes.length > 1 ? (outcomes.length - 1) / Math.max(span(scheduled), 1e-3) : outcomes.length;
  const ok = outcomes.filter((o) => o.ok);
  const finishes = ok.map((o) => o.sentAt + o.latencyMs);
  const achieved = ok.length > 1 ? (ok.length - 1) / Math.max(span(finishes), 1e-3) : ok.length;
  return {
    phase,
    requests: outcomes.length,
    'offered/s': round(offered, 1),
    'achieved/s': round(achieved, 1),
    p50: round(percentile(latencies, 50), 1),
    p95: round(percentile(latencies, 95), 1),
    p99: round(percentile(latencies, 99), 1),
    max: round(Math.max(...latencies), 1),
    errors: outcomes.length - ok.length,
    'pooled %': round((100 * ok.filter((o) => o.view?.pooledKey).length) / Math.max(1, ok.length), 1),
  };
}

/** Stages of the signer's record (`stageMs`) reported on their own; `audit` overlaps `issue`. */
const STAGES = ['claim', 'unwrap', 'sign', 'csr', 'issue', 'audit'] as const;

/**
 * Where the time goes, from the request records (medians, ms): `api` is the client's latency outside
 * the record's received..finished span (the POST, the API's write and enqueue, and the wait's last
 * read); `queueWait` received..started; the signer's stages from `stageMs` (`issue` = the CA call);
 * `writes` the rest of started..finished (state transitions and the final write, plus keygen/destroy).
 */
function breakdown(outcomes: readonly Outcome[]): Record<string, number> {
  const ms = (iso: unknown): number => (typeof iso === 'string' ? Date.parse(iso) : NaN);
  const parts: Record<string, number[]> = { api: [], queueWait: [], writes: [] };
  for (const stage of STAGES) parts[stage] = [];
  for (const o of outcomes) {
    const t = o.view?.timings;
    if (!o.ok || !t) continue;
    const received = ms(t.receivedAt);
    const started = ms(t.startedAt);
    const finished = ms(t.finishedAt);
    parts.api.push(o.latencyMs - (finished - received));
    parts.queueWait.push(started - received);
    const stages = t.stageMs ?? {};
    let staged = 0;
    for (const stage of STAGES) {
      const d = stages[stage];
      if (d === undefined) continue;
      parts[stage].push(d);
      if (stage !== 'audit') staged += d;
    }
    if (t.stageMs) parts.writes.push(finished - started - staged);
  }
  return Object.fromEntries(
    Object.entries(parts)
      .filter(([, v]) => v.length > 0)
      .map(([k, v]) => [`${k}Ms`, round(median(v), 1)]),
  );
}

function byPhase(outcomes: readonly Outcome[]): PhaseStats[] {
  const phases = [...new Set(outcomes.map((o) => o.phase))];
  return phases.map((phase) =>
    phaseStats(
      phase,
      outcomes.filter((o) => o.phase === phase),
    ),
  );
}

export interface WorkloadResult extends Record<string, unknown> {
  readonly phases: PhaseStats[];
  readonly overall: PhaseStats;
  readonly cpuMsPerRequest: Record<string, number>;
  /** The service's own processes: the runner (gateway, API, CA, TSA, schedules) and the consumers. */
  readonly cpuMsPerRequestRunnerAndConsumers: number;
  readonly poolDepth: { start: number; end: number };
  readonly breakdownMedianMs: Record<string, number>;
  readonly machine: Record<string, number>;
  readonly timeline?: Second[];
}

async function runWorkload(t: Target, args: E2eArgs, arrivals: Arrival[]): Promise<WorkloadResult> {
  const depthBefore = await poolDepth(t.url, t.apiKey, args.keyType);
  let countsBefore: ProxyCounts | undefined;
  let cpuBefore = new Map<string, number>();
  let machineBefore = machineCpu();
  let machineAfter = machineBefore;
  let cpuAfter = new Map<string, number>();
  let countsAfter: ProxyCounts | undefined;
  let stopProfile: (() => Promise<void>) | undefined;
  let startEpoch = 0;
  let hsmFrom = 0;
  let hsmOps: Record<string, number> | undefined;
  const stopGc = t.counter
    ? undefined
    : observeGc((m) =>
        t.markers.push({ at: m.at, what: `gc runner${m.kind === 'major' ? ' major' : ''}`, ms: m.ms }),
      );
  // Counted from the first request sent (logins are made before it) to the last answer.
  const outcomes = await runOpenLoopInChild(arrivals, {
    url: t.url,
    apiKey: t.apiKey,
    keyType: args.keyType,
    profile: args.profile,
    identity: t.identity,
    clientId: t.clientId,
    onStart: async () => {
      countsBefore = await t.counter?.read();
      if (t.hsmLog) hsmFrom = hsmLogEnd(t.hsmLog);
      cpuBefore = cpuSnapshot();
      machineBefore = machineCpu();
      if (args.profileDir && !t.counter) {
        mkdirSync(args.profileDir, { recursive: true });
        stopProfile = await profileThisProcess(join(args.profileDir, `runner-${t.identity}.cpuprofile`));
      }
      startEpoch = Date.now();
    },
    onEnd: async () => {
      cpuAfter = cpuSnapshot();
      machineAfter = machineCpu();
      countsAfter = await t.counter?.read();
      if (t.hsmLog) hsmOps = hsmCalls(t.hsmLog, hsmFrom).counts;
      await stopProfile?.();
    },
  });
  stopGc?.();
  const cpu = cpuBetween(cpuBefore, cpuAfter);
  const depthAfter = await poolDepth(t.url, t.apiKey, args.keyType);
  const phases = byPhase(outcomes);
  const overall = phaseStats('all', outcomes);
  const errorCodes: Record<string, number> = {};
  for (const o of outcomes.filter((x) => !x.ok))
    errorCodes[o.error ?? o.status] = (errorCodes[o.error ?? o.status] ?? 0) + 1;
  const lag = outcomes.map((o) => o.sentAt - o.scheduledAt);
  const per = (ms: number): number => round(ms / Math.max(1, outcomes.length), 2);
  const markers = t.jvmGcDir ? [...t.markers, ...jvmGcMarkers(t.jvmGcDir, processNames())] : t.markers;
  return {
    phases,
    overall,
    poolDepth: { start: depthBefore, end: depthAfter },
    breakdownMedianMs: breakdown(outcomes),
    errorCodes,
    generatorLagP99Ms: round(percentile(lag, 99), 1),
    cpuMsPerRequest: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, per(v)])),
    cpuMsPerRequestRunnerAndConsumers: per(functionsCpuMs(cpu)),
    machine: machineShare(machineBefore, machineAfter, cpu),
    ...(t.counter ? {} : { timeline: timeline(outcomes, markers, startEpoch) }),
    ...(countsBefore && countsAfter
      ? { counts: perRequest(countsBefore, countsAfter, cpu, outcomes.length, hsmOps) }
      : {}),
  };
}

/**
 * How busy the machine was while measuring, in % of all its cores: everything at normal priority, this
 * benchmark's processes (pipeline, stand-ins, load generator), and niced work of others (another job on
 * the machine), so a noisy run shows as one.
 */
function machineShare(
  before: MachineCpu,
  after: MachineCpu,
  ours: Record<string, number>,
): Record<string, number> {
  const total =
    after.busyMs + after.nicedMs + after.idleMs - (before.busyMs + before.nicedMs + before.idleMs);
  const pct = (ms: number): number => round((100 * ms) / Math.max(1, total), 1);
  return {
    busyPct: pct(after.busyMs - before.busyMs),
    benchmarkPct: pct(Object.values(ours).reduce((n, v) => n + v, 0)),
    otherNicedPct: pct(after.nicedMs - before.nicedMs),
  };
}

/** Load before the measured phase, not measured: JITs, connections, HSM sessions, the stand-ins' JVMs. */
async function warmUp(t: Target, args: E2eArgs, rate: number): Promise<Record<string, number>> {
  if (args.warmupSeconds <= 0) return { seconds: 0 };
  const outcomes = await runOpenLoopInChild(steadyArrivals(rate, args.warmupSeconds, 'warm-up'), {
    url: t.url,
    apiKey: t.apiKey,
    keyType: args.keyType,
    profile: args.profile,
    identity: t.identity,
    clientId: t.clientId,
  });
  const stats = phaseStats('warm-up', outcomes);
  console.log(
    `warm-up (${t.identity}): ${args.warmupSeconds} s at ${rate}/s, p50 ${stats.p50} ms, p99 ${stats.p99} ms, ${stats.errors} errors`,
  );
  return { seconds: args.warmupSeconds, rate, p50: stats.p50, p99: stats.p99 };
}

/** The rate a workload warms up at: its own for steady, 20/s for the ramp (whose first blocks are slow). */
export function warmupRate(args: E2eArgs): number {
  return args.workload === 'steady' ? args.rate : args.workload === 'ramp' ? 20 : args.rates[0];
}

/** The `max` steps on one pipeline (see e2e.ts). */
async function maxSteps(
  args: E2eArgs,
  identity: IdentityMode,
  keysNeeded: number,
): Promise<Record<string, unknown>> {
  const t = await target(args, identity, keysNeeded, false);
  try {
    const steps: Row[] = [];
    const breakdowns: Record<string, unknown> = {};
    const passes = (s: PhaseStats): boolean => s.p99 <= 300 && s.errors === 0;
    let best = 0;
    let failedAt: number | undefined;
    const warmup = await warmUp(t, args, warmupRate(args));
    const tryRate = async (rate: number): Promise<boolean> => {
      if ((await poolDepth(t.url, t.apiKey, args.keyType)) < rate * args.seconds && t.pipeline)
        await t.pipeline.runKeygen();
      const result = await runWorkload(t, args, steadyArrivals(rate, args.seconds, `${rate}/s`));
      const stats = result.overall;
      steps.push({
        ...stats,
        phase: `${rate}/s`,
        pass: passes(stats) ? 'yes' : 'no',
        'cpu ms/req': result.cpuMsPerRequestRunnerAndConsumers,
      });
      breakdowns[`${rate}/s`] = result.breakdownMedianMs;
      console.log(JSON.stringify(steps[steps.length - 1]));
      return passes(stats);
    };
    for (const rate of args.rates) {
      if (await tryRate(rate)) best = rate;
      else {
        failedAt = rate;
        break;
      }
    }
    for (let round = 0; failedAt !== undefined && round < 3; round++) {
      if (failedAt - best <= Math.max(2, best * 0.1)) break;
      const mid = Math.round((best + failedAt) / 2);
      if (await tryRate(mid)) best = mid;
      else failedAt = mid;
    }
    return { identity, warmup, maxSustainedRate: best, steps, breakdownMedianMs: breakdowns };
  } finally {
    await stopTarget(t);
  }
}

async function workload(job: Extract<E2eJob, { kind: 'workload' }>): Promise<Record<string, unknown>> {
  const t = await target(job.args, job.identity, job.keysNeeded, job.counting);
  try {
    const warmup = await warmUp(t, job.args, warmupRate(job.args));
    return { identity: job.identity, warmup, ...(await runWorkload(t, job.args, job.arrivals)) };
  } finally {
    await stopTarget(t);
  }
}

if (require.main === module) {
  useLocalHsmEnv();
  process.once('message', (job: E2eJob) => {
    void (job.kind === 'max' ? maxSteps(job.args, job.identity, job.keysNeeded) : workload(job)).then(
      (result) => process.send!({ result }, () => process.exit(0)),
      (err: unknown) => process.send!({ error: (err as Error).stack ?? String(err) }, () => process.exit(1)),
    );
  });
}
