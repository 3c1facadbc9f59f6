import { HSM_PRESETS } from './presets';
import type { HsmTimings, PolicyName } from './types';

/** A command-line argument that cannot be used; the message names the flag. */
export class SimulateArgumentError extends Error {
  public override readonly name = 'SimulateArgumentError';
}

export interface SimulateArgs {
  readonly workload: string;
  readonly timings: HsmTimings;
  readonly hsms: number;
  readonly policies: readonly PolicyName[];
  readonly maxPool: number;
  readonly fillShare: number;
  readonly horizonDays: number;
  readonly maxUtilization: number;
  readonly quantile: number;
  readonly initialPool?: number;
  readonly seed: number;
  readonly leadInDays: number;
  readonly search: boolean;
  readonly maxHsms: number;
  readonly chart: string;
}

const POLICIES: readonly PolicyName[] = ['no-pool', 'fill-max', 'forecast'];

export const USAGE = `usage: npm run simulate -- [options]
  --workload ramp|tax-week|year     (tax-week)
  --hsm luna|cloudhsm|softhsm       timing preset (luna)
  --keygen-ms --unwrap-ms --sign-ms --db-load-ms --wrap-save-ms --sessions   override the preset
  --hsms N                          HSMs for the main table and chart (1)
  --policies a,b,c                  of no-pool,fill-max,forecast (all)
  --max-pool N                      pool maximum, both pool policies (10000000)
  --fill-share F                    share of sessions fill-max generates with (0.5)
  --horizon-days D                  forecast policy horizon (28)
  --max-utilization U               forecast policy: request sessions kept at most this busy (0.5)
  --quantile Q                      forecast upper quantile (0.95)
  --initial-pool N                  keys at time 0 (policy/workload default)
  --lead-in-days D                  tax-week: ordinary days before the deadline week (21)
  --seed N                          arrival and noise seed (1)
  --no-search                       skip the minimum-HSM search
  --max-hsms N                      search limit (64)
  --chart PATH                      PNG path (bench/results/simulation-<workload>.png)`;

export function parseArgs(argv: readonly string[]): SimulateArgs {
  const flags = new Map<string, string>();
  const switches = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new SimulateArgumentError(`unexpected argument ${a}`);
    if (a === '--no-search' || a === '--help') switches.add(a);
    else if (i + 1 < argv.length) flags.set(a, argv[++i]);
    else throw new SimulateArgumentError(`${a} needs a value`);
  }
  if (switches.has('--help')) throw new SimulateArgumentError(USAGE);
  const num = (flag: string, fallback: number, min = 0): number => {
    const raw = flags.get(flag);
    if (raw === undefined) return fallback;
    const v = Number(raw);
    if (!Number.isFinite(v) || v < min) throw new SimulateArgumentError(`${flag} must be a number >= ${min}`);
    return v;
  };
  const presetName = flags.get('--hsm') ?? 'luna';
  const preset = HSM_PRESETS[presetName];
  if (!preset) throw new SimulateArgumentError(`--hsm must be one of ${Object.keys(HSM_PRESETS).join(', ')}`);
  const timings: HsmTimings = {
    ...preset,
    keygenMs: num('--keygen-ms', preset.keygenMs),
    unwrapMs: num('--unwrap-ms', preset.unwrapMs),
    signMs: num('--sign-ms', preset.signMs),
    dbLoadMs: num('--db-load-ms', preset.dbLoadMs),
    wrapSaveMs: num('--wrap-save-ms', preset.wrapSaveMs),
    sessionsPerHsm: num('--sessions', preset.sessionsPerHsm, 1),
  };
  const policies = (flags.get('--policies') ?? POLICIES.join(',')).split(',') as PolicyName[];
  const unknown = policies.filter((p) => !POLICIES.includes(p));
  if (unknown.length) throw new SimulateArgumentError(`unknown policy ${unknown.join(', ')}`);
  const workload = flags.get('--workload') ?? 'tax-week';
  const initial = flags.get('--initial-pool');
  return {
    workload,
    timings,
    hsms: num('--hsms', 1, 1),
    policies,
    maxPool: num('--max-pool', 10_000_000),
    fillShare: num('--fill-share', 0.5),
    horizonDays: num('--horizon-days', 28, 1),
    maxUtilization: num('--max-utilization', 0.5, 0.01),
    quantile: num('--quantile', 0.95, 0.01),
    initialPool: initial === undefined ? undefined : num('--initial-pool', 0),
    seed: num('--seed', 1),
    leadInDays: num('--lead-in-days', 21),
    search: !switches.has('--no-search'),
    maxHsms: num('--max-hsms', 64, 1),
    chart: flags.get('--chart') ?? `bench/results/simulation-${workload}.png`,
  };
}
