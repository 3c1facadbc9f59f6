/**
 * Warming before `npm start` announces readiness: self-test sign requests through the real API (the same
 * path as any client's: gateway, API, queue, consumer, pool, HSM, CA, audit) at a steady rate until the
 * last two seconds' p99 meets the normal-hours bound, so the first real requests do not pay for cold JITs
 * (Node's and the stand-ins' JVMs), new connections, HSM object handles and the CA's first issuance.
 * They are ordinary requests of the default client for the test citizens (local only): their
 * certificates and audit events are real.
 */
import type { KeyType } from '@pipeline/core/shared';
import type { SigV4Credentials } from '../client/src/sigv4';
import { sampleRequests, sampleRequest, submitAndWait } from './client';

export interface WarmUpOptions {
  readonly url: string;
  readonly apiKey: string;
  /** The client's own credentials, to sign its calls with (SigV4). */
  readonly credentials?: SigV4Credentials;
  readonly keyType: KeyType;
  /** `trusted-client`: the client vouches for the citizen (no login); otherwise ID tokens from the local IdP. */
  readonly vouchedBy?: string;
  readonly rate: number;
  /** At most this many self-test requests: the pooled keys they may take. */
  readonly maxRequests: number;
  readonly minSeconds: number;
  readonly maxSeconds: number;
  /** The bound the last two seconds' p99 must meet, ms. */
  readonly boundMs: number;
}

/**
 * Why the sending stopped: the last two seconds' p99 met the bound (after minSeconds), the time limit
 * (maxSeconds) or the key budget (maxRequests) was reached.
 */
export type WarmUpStop = 'bound' | 'time' | 'keys';

export interface WarmUpResult {
  readonly seconds: number;
  readonly requests: number;
  readonly failed: number;
  /** p99 of the requests completed in the last two seconds once all were answered (ms); none: undefined. */
  readonly lastP99Ms?: number;
  readonly warm: boolean;
  readonly stoppedBy: WarmUpStop;
}

export async function warmUp(options: WarmUpOptions): Promise<WarmUpResult> {
  const started = Date.now();
  const done: Array<{ at: number; ms: number; ok: boolean }> = [];
  const inFlight: Array<Promise<void>> = [];
  const one = async (body: unknown): Promise<void> => {
    const sent = Date.now();
    let ok = false;
    try {
      ok = (await submitAndWait(options.url, options.apiKey, body, options.credentials)).status === 'signed';
    } catch {
      // counted as failed
    }
    done.push({ at: Date.now(), ms: Date.now() - sent, ok });
  };
  const lastP99 = (): number => {
    const recent = done.filter((d) => d.at > Date.now() - 2000).map((d) => d.ms);
    recent.sort((a, b) => a - b);
    return recent.length ? recent[Math.ceil(0.99 * recent.length) - 1] : Infinity;
  };
  let stoppedBy: WarmUpStop = 'time';
  for (let second = 0; second < options.maxSeconds; second++) {
    if (inFlight.length >= options.maxRequests) {
      stoppedBy = 'keys';
      break;
    }
    // One second's requests, made (logins included) before they are sent over that second.
    const batch = await sampleRequests(options.rate, (i) =>
      sampleRequest(
        options.keyType,
        second * options.rate + i,
        options.vouchedBy ? { vouchedBy: options.vouchedBy } : {},
      ),
    );
    const secondStart = Date.now();
    for (let i = 0; i < batch.length && inFlight.length < options.maxRequests; i++) {
      const wait = secondStart + (i * 1000) / options.rate - Date.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      inFlight.push(one(batch[i].body));
    }
    if (second + 1 >= options.minSeconds && lastP99() <= options.boundMs) {
      stoppedBy = 'bound';
      break;
    }
  }
  if (stoppedBy === 'time' && inFlight.length >= options.maxRequests) stoppedBy = 'keys';
  await Promise.all(inFlight);
  const p99 = lastP99();
  return {
    seconds: Math.round((Date.now() - started) / 100) / 10,
    requests: done.length,
    failed: done.filter((d) => !d.ok).length,
    ...(Number.isFinite(p99) ? { lastP99Ms: Math.round(p99) } : {}),
    warm: p99 <= options.boundMs,
    stoppedBy,
  };
}

/** What the banner says of a warm-up: whether it got warm, and if not, what ended it, with the figures. */
export function warmUpSummary(
  result: WarmUpResult,
  limits: { readonly maxSeconds: number; readonly maxRequests: number; readonly boundMs: number },
): string {
  const p99 =
    result.lastP99Ms === undefined ? 'no answers in the last 2 s' : `last 2 s p99 ${result.lastP99Ms} ms`;
  const failed = result.failed > 0 ? `, ${result.failed} failed` : '';
  const what = `${result.requests} self-test signatures${failed} in ${result.seconds} s`;
  if (result.warm) return `done (${what}, ${p99})`;
  const over = `over ${limits.boundMs} ms`;
  const why = {
    time: `the time limit (${limits.maxSeconds} s) ended it: ${p99}, ${over}`,
    keys: `the key budget (${limits.maxRequests} keys) ran out: ${p99}, ${over}`,
    // Sending stops when the p99 of the answers so far meets the bound; the last answers can raise it.
    bound: `the p99 was within ${limits.boundMs} ms when sending stopped, not once the last answers came (${p99})`,
  }[result.stoppedBy];
  return `NOT warm: ${why} (${what}): expect slow first requests`;
}
