/**
 * `npm run bench -- external --rate R --seconds S [--warmup S] [--key-type T] [--identity assertion|trusted-client]`
 * The end-to-end figures taken by a load generator nobody here wrote, beside our own, in one command. On
 * one fresh local pipeline (quiet logs, keygen off, the pool filled ahead for every request of both runs,
 * no proxy), with every request made first (the IdP logins are not measured): vegeta (vegeta.ts) warms up
 * at R/s for --warmup seconds on targets of its own (not measured) and then attacks at R/s for S seconds,
 * each request one `POST ?wait=20`; then our open-loop generator (load.ts, in a process of its own) runs
 * the same rate and seconds. Both go through the same statistics (e2e-run.ts); the report puts them side
 * by side with the ratios vegeta / ours.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isKeyType, KEY_TYPES, type KeyType } from '@pipeline/core/shared';
import type { LocalPipeline } from '../local/runner/pipeline';
import { startQuietPipeline } from './counted-pipeline';
import { phaseStats, type IdentityMode, type PhaseStats } from './e2e-run';
import { makeRequests, runOpenLoopInChild, steadyArrivals, type Outcome } from './load';
import { finish, option, printTable } from './report';
import { round } from './stats';
import { attack, ensureVegeta, signTargets, statusCodes, toOutcomes, type VegetaReport } from './vegeta';

const USAGE =
  'usage: npm run bench -- external --rate R --seconds S [--warmup S] [--key-type T] [--identity assertion|trusted-client]';

interface ExternalArgs {
  readonly rate: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
  readonly keyType: KeyType;
  readonly identity: IdentityMode;
}

function parseArgs(args: string[]): ExternalArgs {
  const rate = Number(option(args, 'rate'));
  const seconds = Number(option(args, 'seconds'));
  const warmupSeconds = Number(option(args, 'warmup') ?? 10);
  if (!(rate > 0) || !(seconds > 0) || !(warmupSeconds >= 0)) throw new Error(USAGE);
  const keyType = option(args, 'key-type') ?? 'EC-P256';
  if (!isKeyType(keyType)) throw new Error(`--key-type must be one of ${KEY_TYPES.join(', ')}`);
  const identity = option(args, 'identity') ?? 'assertion';
  if (identity !== 'assertion' && identity !== 'trusted-client') throw new Error(USAGE);
  return { rate, seconds, warmupSeconds, keyType, identity };
}

/** How many outcomes ended in each state (`signed`, `failed`, `HTTP 202`, a network error). */
function ended(outcomes: readonly Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) counts[o.status] = (counts[o.status] ?? 0) + 1;
  return counts;
}

/** Requests per vegeta attack: rate x seconds and a few spare, so that no target is ever sent twice. */
function withSpare(count: number): number {
  return count + Math.max(5, Math.ceil(count * 0.02));
}

interface VegetaRun {
  readonly stats: PhaseStats;
  readonly statusCodes: Record<string, number>;
  readonly ended: Record<string, number>;
  readonly vegetaReport: VegetaReport;
}

async function runVegeta(
  pipeline: LocalPipeline,
  dir: string,
  name: string,
  bodies: readonly unknown[],
  a: ExternalArgs,
): Promise<VegetaRun> {
  const { results, report } = await attack({
    dir,
    name,
    targets: signTargets(pipeline.url, pipeline.apiKey, bodies),
    rate: a.rate,
    seconds: a.seconds,
  });
  const outcomes = toOutcomes(results, name);
  return {
    stats: phaseStats(name, outcomes),
    statusCodes: statusCodes(results),
    ended: ended(outcomes),
    vegetaReport: report,
  };
}

export async function run(argv: string[]): Promise<void> {
  const a = parseArgs(argv);
  const vegeta = ensureVegeta();
  const warmupCount = withSpare(Math.round(a.rate * a.warmupSeconds));
  const measuredCount = Math.round(a.rate * a.seconds);
  const vegetaCount = withSpare(measuredCount);
  const keys = Math.ceil((warmupCount + vegetaCount + measuredCount) * 1.05);
  // Private (0700): the targets carry the API key.
  const dir = mkdtempSync(join(tmpdir(), 'bench-vegeta-'));
  const pipeline = await startQuietPipeline(a.keyType, keys, {
    IDENTITY_MODE: a.identity,
    // The logins are made before the runs: tokens and logins must outlive them.
    LOCAL_IDP_ID_TOKEN_TTL_SECONDS: '3000',
    IDENTITY_MAX_AUTH_AGE_SECONDS: '3600',
  }).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  try {
    const load = { keyType: a.keyType, identity: a.identity, clientId: pipeline.clients[0].clientId };
    console.log(`making ${warmupCount + vegetaCount} requests for vegeta (${a.identity}) ...`);
    const requests = await makeRequests(warmupCount + vegetaCount, load);
    const bodies = requests.map((r) => r.body);
    let warmup: PhaseStats | undefined;
    if (a.warmupSeconds > 0) {
      console.log(`vegeta (${vegeta}): warm-up, ${a.warmupSeconds} s at ${a.rate}/s (not measured) ...`);
      const w = await runVegeta(pipeline, dir, 'warm-up', bodies.slice(0, warmupCount), {
        ...a,
        seconds: a.warmupSeconds,
      });
      warmup = w.stats;
      console.log(`warm-up: p50 ${warmup.p50} ms, p99 ${warmup.p99} ms, ${warmup.errors} not signed`);
    }
    console.log(`vegeta: ${a.seconds} s at ${a.rate}/s ...`);
    const external = await runVegeta(pipeline, dir, 'vegeta', bodies.slice(warmupCount), a);
    console.log(`our generator: ${a.seconds} s at ${a.rate}/s, same pipeline ...`);
    const outcomes = await runOpenLoopInChild(steadyArrivals(a.rate, a.seconds, 'ours'), {
      url: pipeline.url,
      apiKey: pipeline.apiKey,
      ...load,
    });
    const ours = { stats: phaseStats('ours', outcomes), ended: ended(outcomes) };
    report(a, external, ours, warmup);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await pipeline.stop();
  }
}

function report(
  a: ExternalArgs,
  external: VegetaRun,
  ours: { stats: PhaseStats; ended: Record<string, number> },
  warmup: PhaseStats | undefined,
): void {
  const v = external.stats;
  const o = ours.stats;
  printTable(
    `external: vegeta and our generator, ${a.keyType}, ${a.identity}, ${a.rate}/s for ${a.seconds} s, open loop, client latency ms (success = 200 signed)`,
    [v, o].map(({ phase, ...s }) => ({ generator: phase, ...s, signed: s.requests - s.errors })),
  );
  console.log(
    `vegeta: HTTP status codes ${JSON.stringify(external.statusCodes)}, ended ${JSON.stringify(external.ended)}`,
  );
  console.log(`vegeta's own report: ${JSON.stringify(external.vegetaReport)}`);
  console.log(`ours: ended ${JSON.stringify(ours.ended)}`);
  const ratio = { p50: round(v.p50 / o.p50, 2), p99: round(v.p99 / o.p99, 2) };
  const within20Pct = Math.abs(ratio.p50 - 1) <= 0.2 && Math.abs(ratio.p99 - 1) <= 0.2;
  console.log(
    `vegeta / ours: p50 ratio ${ratio.p50}, p99 ratio ${ratio.p99} (${within20Pct ? 'within' : 'not within'} 20%)`,
  );
  finish('external', {
    keyType: a.keyType,
    identity: a.identity,
    rate: a.rate,
    seconds: a.seconds,
    warmupSeconds: a.warmupSeconds,
    warmup,
    vegeta: external,
    ours,
    ratio,
    within20Pct,
  });
}
