/**
 * CPU time per process of a run, from /proc (Linux): the benchmark's own process and every descendant,
 * named by what it runs (DynamoDB Local, ElasticMQ, consumer, IdP, ...). Two snapshots give each
 * process's CPU milliseconds in between.
 */
import { readFileSync, readdirSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

interface ProcInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly cpuMs: number;
  readonly name: string;
}

function read(pid: number): ProcInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    return {
      pid,
      ppid: Number(fields[1]),
      // utime + stime (fields 14 and 15 of stat; index 11 and 12 after the command)
      cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND,
      name: nameOf(cmd, pid),
    };
  } catch {
    return undefined;
  }
}

function nameOf(cmd: string, pid: number): string {
  if (pid === process.pid) return 'runner (gateway, API, CA, keygen)';
  if (cmd.includes('load-worker')) return 'load generator';
  if (/dynamodb/i.test(cmd)) return 'DynamoDB Local';
  if (cmd.includes('elasticmq')) return 'ElasticMQ';
  if (cmd.includes('consumer.ts')) return 'consumer (signer)';
  if (cmd.includes('ca-host.ts')) return 'CA host';
  if (cmd.includes('counting-proxy')) return 'counting proxy (measurement)';
  if (/idp/.test(cmd)) return 'IdP';
  return 'other';
}

/** This process and its descendants. */
function descendants(): ProcInfo[] {
  const all = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => read(Number(d)))
    .filter((p): p is ProcInfo => p !== undefined);
  const mine = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all) {
      if (!mine.has(p.pid) && mine.has(p.ppid)) {
        mine.add(p.pid);
        grew = true;
      }
    }
  }
  return all.filter((p) => mine.has(p.pid));
}

/** CPU ms by process name, over this process and its descendants. */
export function cpuSnapshot(): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of descendants()) out.set(p.name, (out.get(p.name) ?? 0) + p.cpuMs);
  return out;
}

/** What each descendant process is, by pid (the JVMs' GC logs are named by pid). */
export function processNames(): Map<number, string> {
  return new Map(descendants().map((p) => [p.pid, p.name]));
}

export function cpuBetween(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  return Object.fromEntries([...after].map(([name, ms]) => [name, ms - (before.get(name) ?? 0)]));
}

/** The whole machine's CPU ticks (/proc/stat): busy at normal priority, busy niced (other work), idle. */
export interface MachineCpu {
  readonly busyMs: number;
  readonly nicedMs: number;
  readonly idleMs: number;
}

export function machineCpu(): MachineCpu {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const ms = (ticks: number): number => (ticks * 1000) / TICKS_PER_SECOND;
  return {
    busyMs: ms(user + system + irq + softirq + steal),
    nicedMs: ms(nice),
    idleMs: ms(idle + iowait),
  };
}
