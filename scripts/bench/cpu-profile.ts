/**
 * CPU profiles of the service's processes under load, and what they say. The runner (this process) is
 * profiled through the inspector for the measured phase only; child processes (consumers, CA host) get
 * `--cpu-prof` from the runner when LOCAL_CPU_PROFILE_DIR is set and write their profile when they exit.
 * `summarizeProfile` reads a `.cpuprofile` and gives self time by function and by area (a package, a
 * folder of ours, Node's internals, the garbage collector, idle).
 */
import { Session } from 'node:inspector/promises';
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { ROOT } from '../local/paths';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  readonly nodes: ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: number[];
  readonly timeDeltas: number[];
}

/** Starts profiling this process; the returned function stops and writes the profile to `file`. */
export async function profileThisProcess(file: string): Promise<() => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 1000 });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

export interface ProfileSummary {
  /** Milliseconds of samples that were not idle. */
  readonly busyMs: number;
  readonly byArea: Array<{ area: string; ms: number; share: number }>;
  readonly byFunction: Array<{ fn: string; ms: number; share: number }>;
}

/** Where a frame's code lives: a package of node_modules, a folder of ours, or Node/V8 itself. */
function areaOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1];
  const rel = relative(ROOT, path).split('/');
  return rel[0] === 'lambdas' || rel[0] === 'scripts'
    ? rel.slice(0, rel[1] === 'handlers' ? 3 : 2).join('/')
    : rel[0];
}

export function summarizeProfile(file: string, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000));
  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  let busy = 0;
  for (const [id, ms] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    busy += ms;
    const area = areaOf(url, functionName);
    areas.set(area, (areas.get(area) ?? 0) + ms);
    const where = url ? `${area}:${url.split('/').pop()}:${lineNumber + 1}` : area;
    const key = `${functionName || '(anonymous)'} ${where}`;
    fns.set(key, (fns.get(key) ?? 0) + ms);
  }
  const rank = <K extends string>(
    m: Map<string, number>,
    k: K,
  ): Array<Record<K, string> & { ms: number; share: number }> =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(
        ([name, ms]) =>
          ({ [k]: name, ms: Math.round(ms), share: Math.round((1000 * ms) / busy) / 10 }) as Record<
            K,
            string
          > & { ms: number; share: number },
      );
  return { busyMs: Math.round(busy), byArea: rank(areas, 'area'), byFunction: rank(fns, 'fn') };
}

if (require.main === module) {
  for (const file of process.argv.slice(2)) {
    const s = summarizeProfile(file, 30);
    console.log(`\n${file}: busy ${s.busyMs} ms`);
    for (const a of s.byArea)
      console.log(`  ${String(a.share).padStart(5)}%  ${String(a.ms).padStart(7)} ms  ${a.area}`);
    console.log('  --');
    for (const f of s.byFunction)
      console.log(`  ${String(f.share).padStart(5)}%  ${String(f.ms).padStart(7)} ms  ${f.fn}`);
  }
}

/** Self time charged to the nearest frame of our own code (lambdas/, scripts/) above each sample. */
export function chargeToOwnCode(file: string, top = 30): Array<{ fn: string; ms: number }> {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile & {
    nodes: Array<ProfileNode & { children?: number[] }>;
  };
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const own = (id: number): string => {
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const { url, functionName, lineNumber } = byId.get(cur)!.callFrame;
      if (url.includes('/work/') && !url.includes('node_modules'))
        return `${functionName || '(anonymous)'} ${relative(ROOT, url.replace(/^file:\/\//, ''))}:${lineNumber + 1}`;
    }
    return byId.get(id)!.callFrame.functionName || '(none)';
  };
  const out = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    if (byId.get(id)!.callFrame.functionName === '(idle)') return;
    const k = own(id);
    out.set(k, (out.get(k) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...out]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([fn, ms]) => ({ fn, ms: Math.round(ms) }));
}
