/**
 * Open-loop load over HTTP: requests are sent on their schedule whatever the responses, so slow
 * answers show as latency instead of silently lowering the offered rate (no coordinated omission).
 * Latency is the client's: from sending the POST to seeing the terminal result (GET ?wait=). The
 * citizens log in at the identity provider before the run (each login is bound to its request's id and
 * digest, so the requests are made then too): the IdP is not part of the service being measured.
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { AdesProfile, KeyType } from '@pipeline/core/shared';
import { STUDY_RAMP_GAPS_MS } from '../simulate/workloads';
import {
  sampleRequest,
  sampleRequests,
  submitAndWait,
  type SampleRequest,
  type SignRequestView,
} from '../local/client';

export interface Arrival {
  /** Milliseconds after the start of the run. */
  readonly at: number;
  readonly phase: string;
}

export interface Outcome {
  readonly phase: string;
  readonly scheduledAt: number;
  /** When the POST actually went out (ms after start): lag behind schedule means the generator is saturated. */
  readonly sentAt: number;
  readonly latencyMs: number;
  readonly ok: boolean;
  readonly status: string;
  readonly error?: string;
  readonly view?: SignRequestView;
}

export interface LoadOptions {
  readonly url: string;
  readonly apiKey: string;
  readonly keyType: KeyType;
  /** `cms` requests of this profile at the default level (B-LT); `raw` ones without it. */
  readonly profile?: AdesProfile;
  /**
   * How the signer is identified: `assertion` (default) logs each citizen in at the IdP for an ID token;
   * `trusted-client` has this API client vouch for the citizen in a signed request object.
   */
  readonly identity?: 'assertion' | 'trusted-client';
  /** The API client the requests come from (it signs the request objects in `trusted-client` mode). */
  readonly clientId?: string;
  /** Called once the logins are made, right before the first request is sent (measurements start). */
  readonly onStart?: () => Promise<void>;
  /** Called once the last answer is in, while the generator (in a child process) still runs. */
  readonly onEnd?: () => Promise<void>;
}

/**
 * `count` requests of the load's kind, made before a run: each with its citizen's login at the IdP
 * (`assertion`) or its client's request object (`trusted-client`).
 */
export async function makeRequests(
  count: number,
  options: Pick<LoadOptions, 'keyType' | 'profile' | 'identity' | 'clientId'>,
): Promise<SampleRequest[]> {
  const vouchedBy = options.identity === 'trusted-client' ? options.clientId : undefined;
  if (options.identity === 'trusted-client' && !vouchedBy)
    throw new Error('trusted-client load needs a clientId');
  return sampleRequests(count, (i) =>
    sampleRequest(options.keyType, i, {
      ...(vouchedBy ? { vouchedBy } : {}),
      ...(options.profile ? { profile: options.profile } : {}),
    }),
  );
}

export async function runOpenLoop(arrivals: readonly Arrival[], options: LoadOptions): Promise<Outcome[]> {
  const requests = await makeRequests(arrivals.length, options);
  await options.onStart?.();
  const start = performance.now();
  const pending: Array<Promise<Outcome>> = [];
  for (let i = 0; i < arrivals.length; i++) {
    const arrival = arrivals[i];
    const wait = arrival.at - (performance.now() - start);
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(one(arrival, requests[i], start, options));
  }
  return Promise.all(pending);
}

/** runOpenLoop in a child process (load-worker.ts): its CPU shows apart from the service's. */
export function runOpenLoopInChild(arrivals: readonly Arrival[], options: LoadOptions): Promise<Outcome[]> {
  const child = fork(join(__dirname, 'load-worker.ts'), [], { execArgv: ['--import', 'tsx'] });
  return new Promise<Outcome[]>((resolve, reject) => {
    child.on('message', (m: { ready?: true; outcomes?: Outcome[]; error?: string }) => {
      if (m.ready)
        void (options.onStart?.() ?? Promise.resolve()).then(() => child.send({ go: true }), reject);
      else if (m.outcomes) {
        const outcomes = m.outcomes;
        void (options.onEnd?.() ?? Promise.resolve()).then(() => {
          child.send({ exit: true });
          resolve(outcomes);
        }, reject);
      } else if (m.error) reject(new Error(`load generator failed: ${m.error}`));
    });
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`load generator exited with code ${code}`));
    });
    const { url, apiKey, keyType, profile, identity, clientId } = options;
    child.send({ arrivals, options: { url, apiKey, keyType, profile, identity, clientId } });
  });
}

async function one(
  arrival: Arrival,
  request: SampleRequest,
  start: number,
  options: LoadOptions,
): Promise<Outcome> {
  const sentAt = performance.now() - start;
  // Latency is taken when the outcome is built: from sending the POST to seeing the answer.
  const outcome = (ok: boolean, status: string, view?: SignRequestView): Outcome => ({
    phase: arrival.phase,
    scheduledAt: arrival.at,
    sentAt,
    latencyMs: performance.now() - start - sentAt,
    ok,
    status,
    error: view?.error?.code,
    view,
  });
  try {
    const { status, view } = await submitAndWait(options.url, options.apiKey, request.body);
    return outcome(status === 'signed', status, view);
  } catch (err) {
    // fetch's TypeError says little: its cause has the socket's code (ECONNRESET, UND_ERR_SOCKET, ...).
    const cause = (err as { cause?: { code?: unknown } }).cause?.code;
    return outcome(false, `${(err as Error).name}${cause ? ` ${String(cause)}` : ''}`);
  }
}

/** The study's workload (one definition, the simulator's): 2,200 requests in blocks of 100, 1 -> 100 -> 5/s. */
export function rampArrivals(blockSize = 100, gaps: readonly number[] = STUDY_RAMP_GAPS_MS): Arrival[] {
  const arrivals: Arrival[] = [];
  let t = 0;
  gaps.forEach((gap, block) => {
    const phase = `${String(block + 1).padStart(2, '0')} @${round1(1000 / gap)}/s`;
    for (let i = 0; i < blockSize; i++) {
      arrivals.push({ at: t, phase });
      t += gap;
    }
  });
  return arrivals;
}

export function steadyArrivals(rate: number, seconds: number, phase = `steady @${rate}/s`): Arrival[] {
  const count = Math.round(rate * seconds);
  return Array.from({ length: count }, (_, i) => ({ at: (i * 1000) / rate, phase }));
}

function round1(v: number): number {
  return Math.round(v * 10) / 10;
}
