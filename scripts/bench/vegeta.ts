/**
 * vegeta (github.com/tsenart/vegeta, a load generator nobody here wrote, pinned and installed by
 * install-vegeta.sh): its targets file made from our sign requests, an attack run as a process of its
 * own, and its encoded results read back as the outcomes our own generator reports (load.ts), so that
 * both go through the same statistics. Each target is one `POST ?wait=20`: one round trip is the whole
 * signature, and an answer that is not `signed` (a 202 that did not end within the wait, an error) is a
 * failure.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Outcome } from './load';
import type { SignRequestView } from '../local/client';
import { LOCAL_DIR } from '../local/paths';
import { runInstaller, ToolError } from '../local/verify/tool';

export const VEGETA_BIN = join(LOCAL_DIR, 'bin', 'vegeta');
const INSTALLER = join(__dirname, 'install-vegeta.sh');

/** vegeta could not be installed or did not run as asked (its messages included). */
export class VegetaError extends ToolError {}

/** Installs vegeta if needed (install-vegeta.sh returns at once when it is in place) and returns its path. */
export function ensureVegeta(): string {
  runInstaller(INSTALLER, 'vegeta', VegetaError);
  return VEGETA_BIN;
}

/**
 * vegeta's JSON targets (`-format=json`), one a line: each body its own `POST <api>/sign-requests?wait=20`
 * with the API key, the body base64 as vegeta wants it.
 */
export function signTargets(apiUrl: string, apiKey: string, bodies: readonly unknown[]): string {
  const header = { 'Content-Type': ['application/json'], 'x-api-key': [apiKey] };
  const url = `${apiUrl}/sign-requests?wait=20`;
  return bodies
    .map((body) =>
      JSON.stringify({
        method: 'POST',
        url,
        body: Buffer.from(JSON.stringify(body)).toString('base64'),
        header,
      }),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** One line of `vegeta encode --to json`: latency in nanoseconds, the response body base64. */
export interface VegetaResult {
  readonly seq: number;
  readonly code: number;
  readonly timestamp: string;
  readonly latency: number;
  readonly error: string;
  readonly body?: string | null;
}

export function parseEncoded(text: string): VegetaResult[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as VegetaResult);
}

/** Epoch milliseconds of a Go timestamp, nanoseconds kept as the fraction. */
function epochMs(timestamp: string): number {
  const subMs = /\.\d{3}(\d+)(?:Z|[+-]\d\d:\d\d)$/.exec(timestamp)?.[1];
  return Date.parse(timestamp) + (subMs ? Number(`0.${subMs}`) : 0);
}

function view(result: VegetaResult): SignRequestView | undefined {
  if (!result.body) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(result.body, 'base64').toString('utf8')) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as SignRequestView) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * vegeta's results as our generator's outcomes: sent when vegeta sent them (ms after the first), ok when
 * the answer is 200 with a body `signed`; the status is the body's state, `HTTP <code>` for any other
 * answer (202: not ended within the wait) or vegeta's error when there was no answer.
 */
export function toOutcomes(results: readonly VegetaResult[], phase: string): Outcome[] {
  const sent = results.map((r) => epochMs(r.timestamp));
  const start = Math.min(...sent);
  return results.map((r, i) => {
    const v = r.code === 200 ? view(r) : undefined;
    const status = r.code === 0 ? r.error || 'no answer' : (v?.status ?? `HTTP ${r.code}`);
    return {
      phase,
      scheduledAt: sent[i] - start,
      sentAt: sent[i] - start,
      latencyMs: r.latency / 1e6,
      ok: r.code === 200 && v?.status === 'signed',
      status,
      error: v?.error?.code,
      view: v,
    };
  });
}

/** How many answers had each HTTP status code (`0`: none, vegeta's error instead). */
export function statusCodes(results: readonly VegetaResult[]): Record<string, number> {
  const codes: Record<string, number> = {};
  for (const r of results) codes[String(r.code)] = (codes[String(r.code)] ?? 0) + 1;
  return codes;
}

/** vegeta's own summary (`report -type=json`), latencies in ms: a cross-check of the figures read from the lines. */
export interface VegetaReport {
  readonly requests: number;
  readonly rate: number;
  readonly throughput: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
  readonly statusCodes: Record<string, number>;
}

export function parseReport(text: string): VegetaReport {
  const r = JSON.parse(text) as {
    requests: number;
    rate: number;
    throughput: number;
    latencies: Record<'50th' | '95th' | '99th' | 'max', number>;
    status_codes: Record<string, number>;
  };
  const ms = (ns: number): number => Math.round(ns / 1e5) / 10;
  return {
    requests: r.requests,
    rate: Math.round(r.rate * 10) / 10,
    throughput: Math.round(r.throughput * 10) / 10,
    p50: ms(r.latencies['50th']),
    p95: ms(r.latencies['95th']),
    p99: ms(r.latencies['99th']),
    max: ms(r.latencies.max),
    statusCodes: r.status_codes,
  };
}

export interface AttackOptions {
  /** A private directory for the targets and results files (the targets carry the API key). */
  readonly dir: string;
  /** The attack's name: its files' prefix. */
  readonly name: string;
  /** vegeta's targets (signTargets): at least rate x seconds of them, each used once. */
  readonly targets: string;
  readonly rate: number;
  readonly seconds: number;
}

/**
 * Runs `vegeta attack` open loop at `rate`/s for `seconds`: workers are added whenever all are busy, up
 * to enough for every request of 30 s (the timeout) to be in flight at once. Asynchronous: the pipeline
 * may run in this very process. Returns vegeta's encoded results and its own report.
 */
export async function attack(o: AttackOptions): Promise<{ results: VegetaResult[]; report: VegetaReport }> {
  const file = (ext: string): string => join(o.dir, `${o.name}.${ext}`);
  writeFileSync(file('targets.json'), o.targets, { mode: 0o600 });
  await vegeta([
    'attack',
    '-format=json',
    `-targets=${file('targets.json')}`,
    `-rate=${o.rate}/s`,
    `-duration=${o.seconds}s`,
    '-timeout=30s',
    `-max-workers=${Math.max(100, Math.ceil(o.rate * 30))}`,
    `-name=${o.name}`,
    `-output=${file('bin')}`,
  ]);
  await vegeta(['encode', '--to', 'json', `-output=${file('jsonl')}`, file('bin')]);
  const report = parseReport(await vegeta(['report', '-type=json', file('bin')]));
  return { results: parseEncoded(readFileSync(file('jsonl'), 'utf8')), report };
}

/** Runs vegeta with `args`; resolves to its standard output, rejects with its standard error. */
function vegeta(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(VEGETA_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', (e) =>
      reject(new VegetaError(`vegeta ${args[0]} did not start: ${e.message}`, err, null)),
    );
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new VegetaError(`vegeta ${args[0]} failed`, err, code)),
    );
  });
}
