/**
 * `npm run bench -- e2e <ramp | steady --rate R --seconds S | max> [--rates 10,20,...] [--key-type T] [--url URL]
 *   [--persist]`
 * The full local pipeline driven over HTTP by an open-loop load generator. Starts the pipeline itself
 * (filling the pool for the workload first) unless --url names a running one.
 */
import { isKeyType, KEY_TYPES, type KeyType } from '@pipeline/core';
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { call } from '../local/client';
import { costPerMillion, PRICES } from './costs';
import type { ProxyCounts } from './counting-proxy';
import { cpuBetween, cpuSnapshot } from './process-cpu';
import { startLocalPipeline, type LocalPipeline } from '../local/runner/pipeline';
import { rampArrivals, runOpenLoopInChild, steadyArrivals, type Arrival, type Outcome } from './load';
import { finish, option, printTable, type Row } from './report';
import { median, percentile, round } from './stats';

interface Args {
  readonly workload: 'ramp' | 'steady' | 'max';
  readonly rate: number;
  readonly seconds: number;
  readonly keyType: KeyType;
  readonly url?: string;
  readonly persist: boolean;
  readonly rates: number[];
}

function parseArgs(args: string[]): Args {
  const get = (name: string): string | undefined => option(args, name);
  const workload = args[0];
  if (workload !== 'ramp' && workload !== 'steady' && workload !== 'max') {
    throw new Error(
      'usage: npm run bench -- e2e <ramp|steady|max> [--rate R --seconds S] [--rates R1,R2,...] [--key-type T] [--url URL]',
    );
  }
  const keyType = get('key-type') ?? (workload === 'max' ? 'EC-P256' : 'RSA-2048');
  if (!isKeyType(keyType)) throw new Error(`--key-type must be one of ${KEY_TYPES.join(', ')}`);
  return {
    workload,
    rate: Number(get('rate') ?? 50),
    seconds: Number(get('seconds') ?? (workload === 'max' ? 60 : 30)),
    keyType,
    url: get('url'),
    persist: args.includes('--persist'),
    rates: (get('rates') ?? '10,20,30,40,60,80,100,150,200').split(',').map(Number),
  };
}

interface Target {
  readonly url: string;
  readonly apiKey: string;
  readonly pipeline?: LocalPipeline;
  readonly counter?: Counter;
}

/** The counting proxy process: its IPC, as promises. */
class Counter {
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

async function target(args: Args, keysNeeded: number): Promise<Target> {
  if (args.url) {
    const apiKey = process.env.LOCAL_API_KEY;
    if (!apiKey) throw new Error('with --url, set LOCAL_API_KEY to the API key of that pipeline');
    return { url: args.url, apiKey };
  }
  const counter = await Counter.start();
  const pipeline = await startLocalPipeline({
    wrapEndpoint: (service, url) => counter.wrap(service, url),
    persist: args.persist,
    resourcePrefix: args.persist ? 'bench-' : undefined,
    log: () => undefined,
    keygen: false,
    env: {
      PORT: '0',
      LOG_LEVEL: 'WARN',
      LOCAL_ACCESS_LOG: '0',
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
  return { url: pipeline.url, apiKey: pipeline.apiKey, pipeline, counter };
}

/** Calls, item operations, invocations and CPU per request between two snapshots. */
function perRequest(
  before: ProxyCounts,
  after: ProxyCounts,
  cpu: Record<string, number>,
  requests: number,
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
    lambdaCpuMsPerRequest: per(
      Object.entries(cpu)
        .filter(([k]) => /runner|consumer|CA host/.test(k))
        .reduce((n, [, v]) => n + v, 0),
    ),
  };
  return {
    tableOpsPerRequest: per(items),
    tableCallsPerRequest: per(total('dynamodb.')),
    sdkCallsPerRequest: per(total('dynamodb.') + total('sqs.') + total('lambda.')),
    caInvocationsPerRequest: per(caInvocations),
    caItemsPerInvocation: round((after.caBatchItems - before.caBatchItems) / Math.max(1, caInvocations), 1),
    callsPerRequest: Object.fromEntries(Object.entries(calls).map(([k, v]) => [k, per(v)])),
    cpuMsPerRequest,
    cpuMsPerRequestService: per(service),
    costPerMillionUsd: {
      prices: `${PRICES.region}, list prices of ${PRICES.retrieved}`,
      ...costPerMillion(counts),
    },
  };
}

interface PhaseStats extends Row {
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

function phaseStats(phase: string, outcomes: readonly Outcome[]): PhaseStats {
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
 * the record's received..finished span (the POST, the API's write and enqueue, and the long-poll's last
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

async function runWorkload(t: Target, args: Args, arrivals: Arrival[]): Promise<Record<string, unknown>> {
  const depthBefore = await poolDepth(t.url, t.apiKey, args.keyType);
  let countsBefore: ProxyCounts | undefined;
  let cpuBefore = new Map<string, number>();
  let cpuAfter = new Map<string, number>();
  let countsAfter: ProxyCounts | undefined;
  // Counted from the first request sent (logins are made before it) to the last answer.
  const outcomes = await runOpenLoopInChild(arrivals, {
    url: t.url,
    apiKey: t.apiKey,
    keyType: args.keyType,
    onStart: async () => {
      countsBefore = await t.counter?.read();
      cpuBefore = cpuSnapshot();
    },
    onEnd: async () => {
      cpuAfter = cpuSnapshot();
      countsAfter = await t.counter?.read();
    },
  });
  const cpu = cpuBetween(cpuBefore, cpuAfter);
  const depthAfter = await poolDepth(t.url, t.apiKey, args.keyType);
  const phases = byPhase(outcomes);
  const overall = phaseStats('all', outcomes);
  const errorCodes: Record<string, number> = {};
  for (const o of outcomes.filter((x) => !x.ok))
    errorCodes[o.error ?? o.status] = (errorCodes[o.error ?? o.status] ?? 0) + 1;
  const lag = outcomes.map((o) => o.sentAt - o.scheduledAt);
  return {
    phases,
    overall,
    poolDepth: { start: depthBefore, end: depthAfter },
    breakdownMedianMs: breakdown(outcomes),
    errorCodes,
    generatorLagP99Ms: round(percentile(lag, 99), 1),
    ...(countsBefore && countsAfter ? perRequest(countsBefore, countsAfter, cpu, outcomes.length) : {}),
  };
}

export async function run(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  const arrivals =
    args.workload === 'ramp'
      ? rampArrivals()
      : args.workload === 'steady'
        ? steadyArrivals(args.rate, args.seconds)
        : [];
  // max: keys for the two fastest steps that may run; each step tops the pool up again if it runs low.
  const keysNeeded =
    args.workload === 'max'
      ? Math.ceil(Math.max(...args.rates) * args.seconds * 1.1)
      : Math.ceil(arrivals.length * 1.05);
  const t = await target(args, keysNeeded);
  try {
    if (args.workload !== 'max') {
      const result = await runWorkload(t, args, arrivals);
      printTable(`e2e ${args.workload}, ${args.keyType}, open loop, client latency ms`, [
        ...(result.phases as Row[]),
        result.overall as Row,
      ]);
      console.log(
        `pool depth ${JSON.stringify(result.poolDepth)}; where the time goes (medians): ${JSON.stringify(result.breakdownMedianMs)}`,
      );
      finish(`e2e-${args.workload}`, { keyType: args.keyType, ...result });
      return;
    }
    // max: step the rate up until a step fails (p99 > 300 ms or any error), then bisect between the last
    // pass and the first failure until they are within 10% (at least 2/s) or after 3 more steps.
    const steps: Row[] = [];
    const breakdowns: Record<string, unknown> = {};
    const passes = (s: PhaseStats): boolean => s.p99 <= 300 && s.errors === 0;
    let best = 0;
    let failedAt: number | undefined;
    const tryRate = async (rate: number): Promise<boolean> => {
      if ((await poolDepth(t.url, t.apiKey, args.keyType)) < rate * args.seconds && t.pipeline)
        await t.pipeline.runKeygen();
      const result = await runWorkload(t, args, steadyArrivals(rate, args.seconds, `${rate}/s`));
      const stats = result.overall as PhaseStats;
      steps.push({ ...stats, phase: `${rate}/s`, pass: passes(stats) ? 'yes' : 'no' });
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
    printTable(
      `e2e max, ${args.keyType}, ${args.seconds} s per step, pass = p99 <= 300 ms and no errors`,
      steps,
    );
    finish('e2e-max', {
      keyType: args.keyType,
      secondsPerStep: args.seconds,
      maxSustainedRate: best,
      steps,
      breakdownMedianMs: breakdowns,
    });
  } finally {
    await t.pipeline?.stop();
    t.counter?.stop();
  }
}
