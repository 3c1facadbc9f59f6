/**
 * `npm run bench -- csc [--rate R] [--seconds S | --requests N]`: the CSC API v2 beside today's API at
 * the same rate, in one run against one local pipeline behind the counting proxy. The same number of
 * EC-P256 signatures goes through (a) today's API (the citizen's login at the local IdP for an ID token,
 * POST /v1/sign-requests?wait) and then (b) the CSC path (oauth2/authorize with PKCE, login and approval
 * at the local IdP, callback, oauth2/token, signatures/signHash in operationMode S), each at R flows per
 * second started open-loop by a load generator in a process of its own. For each: p50/p95/p99 of the
 * signing call and of the whole flow (logins included), signatures per second, CPU ms per signature of
 * the functions' processes (runner, consumers, CA host) and all-in (every process but the proxy and the
 * load generator: stand-ins and IdP included), DynamoDB item operations per signature, and CSC/API.
 * The counting proxy's hop is in every latency (both paths alike).
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { FlowKind, FlowOutcome, FlowTarget } from './csc-flows';
import { startCountedPipeline } from './counted-pipeline';
import { Counter } from './e2e-run';
import { cpuBetween, cpuSnapshot } from './process-cpu';
import { finish, option, printTable, type Row } from './report';
import { percentile, round } from './stats';

const WARMUP = 3;
const USAGE = 'usage: npm run bench -- csc [--rate R] [--seconds S | --requests N]';

/** The suite's options: the rate and how many signatures each path makes (--requests, else R x S). */
function cscOptions(args: readonly string[]): { rate: number; requests: number } {
  const rate = Number(option(args, 'rate') ?? '2');
  const seconds = Number(option(args, 'seconds') ?? '30');
  const requests = Number(option(args, 'requests') ?? String(Math.round(rate * seconds)));
  if (!(rate > 0) || !(seconds > 0) || !Number.isInteger(requests) || requests < 1) throw new Error(USAGE);
  return { rate, requests };
}

interface Phase {
  readonly outcomes: FlowOutcome[];
  readonly seconds: number;
  readonly cpu: Record<string, number>;
  readonly tableItems: number;
}

/** One phase: the load generator runs `count` flows of `kind` at `rate`; CPU and counts around it. */
async function phase(
  kind: FlowKind,
  target: FlowTarget,
  count: number,
  rate: number,
  first: number,
  counter: Counter,
): Promise<Phase> {
  const child = fork(join(__dirname, 'csc-load-worker.ts'), [], { execArgv: ['--import', 'tsx'] });
  let before: { cpu: ReturnType<typeof cpuSnapshot>; items: number } | undefined;
  return new Promise<Phase>((resolve, reject) => {
    child.on('message', (m: { ready?: true; outcomes?: FlowOutcome[]; seconds?: number }) => {
      if (m.ready) {
        void counter.read().then((counts) => {
          before = { cpu: cpuSnapshot(), items: counts.tableItemOps };
          child.send({ go: true });
        }, reject);
      } else if (m.outcomes) {
        const cpu = cpuBetween(before!.cpu, cpuSnapshot());
        const outcomes = m.outcomes;
        void counter.read().then((counts) => {
          child.send({ exit: true });
          resolve({ outcomes, seconds: m.seconds!, cpu, tableItems: counts.tableItemOps - before!.items });
        }, reject);
      }
    });
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`load generator exited with code ${code}`));
    });
    child.send({ kind, target, count, rate, first });
  });
}

/** A phase's figures per signature (only successful flows in the percentiles). */
function figuresOf(name: string, p: Phase): Row {
  const ok = p.outcomes.filter((o) => o.ok);
  const n = p.outcomes.length;
  const sum = (match: (process: string) => boolean): number =>
    Object.entries(p.cpu)
      .filter(([process]) => match(process))
      .reduce((total, [, ms]) => total + ms, 0);
  const ms = (values: number[], q: number): number => round(percentile(values, q), 1);
  const sign = ok.map((o) => o.signMs);
  const flow = ok.map((o) => o.flowMs);
  return {
    path: name,
    signatures: n,
    failed: n - ok.length,
    'sign p50 ms': ms(sign, 50),
    'sign p95 ms': ms(sign, 95),
    'sign p99 ms': ms(sign, 99),
    'flow p50 ms': ms(flow, 50),
    'flow p95 ms': ms(flow, 95),
    'flow p99 ms': ms(flow, 99),
    'signatures/s': round(ok.length / p.seconds, 2),
    'functions CPU ms/sig': round(sum((x) => /runner|consumer|CA host/.test(x)) / n, 1),
    'all-in CPU ms/sig': round(sum((x) => !/proxy|load generator/.test(x)) / n, 1),
    'table items/sig': round(p.tableItems / n, 2),
  };
}

/** CSC/API for every numeric figure of the two rows. */
function ratioRow(csc: Row, api: Row): Row {
  const row: Row = { path: 'CSC/API' };
  for (const [key, value] of Object.entries(csc)) {
    const base = api[key];
    if (key === 'path' || key === 'signatures' || key === 'failed') continue;
    if (typeof value === 'number' && typeof base === 'number' && base !== 0)
      row[key] = round(value / base, 2);
  }
  return row;
}

export async function run(args: string[]): Promise<void> {
  const { rate, requests } = cscOptions(args);
  const counter = await Counter.start();
  const keys = 2 * (requests + WARMUP) + 4;
  const pipeline = await startCountedPipeline(counter, keys);
  const phases: Record<FlowKind, Phase | undefined> = { api: undefined, csc: undefined };
  try {
    const cscClient = pipeline.csc?.client;
    if (!cscClient) throw new Error('the local pipeline has no CSC API (no OpenID Provider)');
    const target: FlowTarget = {
      apiUrl: pipeline.url,
      apiKey: pipeline.apiKey,
      keyType: 'EC-P256',
      cscUrl: pipeline.csc!.url,
      cscClient,
      idpRedirectUri: process.env.CSC_IDP_REDIRECT_URI!,
    };
    for (const kind of ['api', 'csc'] as const) {
      await phase(kind, target, WARMUP, rate, 0, counter);
      console.log(`${kind}: ${requests} signatures at ${rate}/s ...`);
      phases[kind] = await phase(kind, target, requests, rate, WARMUP, counter);
    }
  } finally {
    await pipeline.stop();
    counter.stop();
  }
  const api = figuresOf("today's API", phases.api!);
  const csc = figuresOf('CSC API v2', phases.csc!);
  const rows = [api, csc, ratioRow(csc, api)];
  printTable(`CSC beside today's API: EC-P256, ${requests} signatures each at ${rate}/s`, rows);
  const errors = [...phases.api!.outcomes, ...phases.csc!.outcomes].flatMap((o) =>
    o.error ? [o.error] : [],
  );
  if (errors.length) console.log(`failures: ${[...new Set(errors)].join('; ')}`);
  finish('csc', {
    rate,
    requests,
    results: rows,
    cpuMsByProcess: { api: phases.api!.cpu, csc: phases.csc!.cpu },
  });
}
