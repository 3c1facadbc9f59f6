/**
 * One key type drained does not slow the others. A steady open-loop load of EC-P256 requests from one
 * e-service runs against a large EC-P256 pool; then another e-service keeps sending RSA-2048 requests,
 * several times faster than on-the-fly generation serves them, and the tiny RSA-2048 pool runs dry.
 * Under the `fallback` policy the RSA requests fall back to on-the-fly generation, bounded per signer
 * process (POOL_FALLBACK_MAX_IN_FLIGHT): the ones beyond the bound wait briefly or are handed back to the
 * queue until a generation is free, and the API accepts no more RSA requests than the pool and on-the-fly
 * generation serve in time (POOL_ADMISSION_ON_THE_FLY; the drainer is refused 429/503 beyond and retries).
 * Every accepted request is signed, none stays open, and EC-P256 latency while the RSA pool is dry stays
 * close to what it was before.
 *
 * RSA generation takes a network HSM's time here (HSM_KEYGEN_LATENCY_MS): SoftHSM alone generates in
 * this machine's CPU, which a real HSM does not take from the signer. Without the bound (run with
 * POOL_FALLBACK_MAX_IN_FLIGHT=1000) every RSA request generates at once, the generations hold the
 * signer's record slots (SoftHSM's part of them its cores too), EC-P256 requests queue behind them, and
 * the bounds below fail. Latency is the service's own (the record's finishedAt - receivedAt), not the
 * client's polling.
 */
import { randomBytes } from 'node:crypto';
import type { KeyType } from '@pipeline/core/shared';
import { percentile } from '../../../bench/stats';
import { sampleRequest, sampleRequests, type SampleRequest, type SignRequestView } from '../../client';
import {
  NotAcceptedError,
  expectAllEnded,
  sleep,
  startFaultPipeline,
  tally,
  submit,
  waitForTerminal,
  type FaultPipeline,
  type Submitted,
} from '../../faults/harness';

jest.setTimeout(240_000);

const EC_RATE = 3; // per second, for the whole test
/** RSA-2048 requests per second while the pool is drained: several times what the bound generates. */
const RSA_RATE = 6;
/**
 * A busy network HSM's RSA-2048 generation time, on top of SoftHSM's (a Luna takes ~673 ms alone; with
 * 700 ms the unbounded fallback here still kept up when the machine was quiet, and hid the harm).
 */
const RSA_KEYGEN_LATENCY_MS = 2000;
const WARMUP_S = 3;
const BEFORE_S = 12;
const DRAIN_S = 16;
/** After the RSA load starts: the pool's few keys are gone, the fallback is at its bound. */
const DRAINED_AFTER_S = 2;
const RSA_POOL = 5;
const DRAINER = { clientId: 'drainer', apiKey: `drainer-${randomBytes(8).toString('hex')}` };

let fault: FaultPipeline;

beforeAll(async () => {
  fault = await startFaultPipeline({
    env: {
      POOL_TARGETS: `EC-P256=300,RSA-2048=${RSA_POOL}`,
      POOL_BUNDLE_SIZE: String(RSA_POOL),
      POOL_EMPTY_POLICY: 'fallback',
      POOL_FALLBACK_MAX_IN_FLIGHT: process.env.POOL_FALLBACK_MAX_IN_FLIGHT ?? '1',
      POOL_FALLBACK_WAIT_MS: process.env.POOL_FALLBACK_WAIT_MS ?? '2000',
      HSM_KEYGEN_LATENCY_MS: `RSA-2048=${RSA_KEYGEN_LATENCY_MS}`,
      // At most 5 + 6 open RSA requests (the drainer alone: 8), which one generation at a time serves
      // within their deliveries (a request without a key comes back after 5 s).
      POOL_ADMISSION_ON_THE_FLY: '6',
      POOL_CLIENT_RESERVE: '3',
      POOL_RETRY_AFTER_SECONDS: '5',
      // One signer process: the bound is per process, and one process is what a 2-core machine holds.
      LOCAL_CONSUMERS: '1',
      LOCAL_API_CLIENTS: `${DRAINER.clientId}:${DRAINER.apiKey}`,
      // Nothing here is slow enough to be redelivered: each request is measured once.
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '60',
      SIGN_ATTEMPT_LEASE_SECONDS: '50',
    },
  });
  await fault.pipeline.runKeygen();
});

afterAll(async () => {
  await fault?.stop();
});

interface Sent extends Submitted {
  readonly keyType: KeyType;
}

/**
 * Submits `requests` open-loop: the i-th at `startAt + i / rate`, whatever the earlier ones do, each
 * retried for up to 30 s while refused 429/503. Returns the accepted ones and how many were never.
 */
async function openLoop(
  requests: readonly SampleRequest[],
  rate: number,
  startAt: number,
  apiKey: string,
): Promise<{ sent: Sent[]; notAccepted: number }> {
  const results = await Promise.all(
    requests.map(async (request, i) => {
      await sleep(startAt + (i * 1000) / rate - Date.now());
      try {
        const sent = await submit(fault.pipeline.url, apiKey, request, Date.now() + 30_000);
        return { ...sent, keyType: request.body.keyType };
      } catch (err) {
        if (err instanceof NotAcceptedError) return undefined;
        throw err;
      }
    }),
  );
  const sent = results.filter((r): r is Sent => r !== undefined);
  return { sent, notAccepted: results.length - sent.length };
}

/** The service's latency of each request received in [from, to): finishedAt - receivedAt. */
function latencies(
  sent: readonly Sent[],
  views: ReadonlyMap<string, SignRequestView | undefined>,
  from: number,
  to: number,
): number[] {
  return sent
    .map((s) => views.get(s.id)!.timings)
    .map((t) => ({ received: Date.parse(String(t.receivedAt)), finished: Date.parse(String(t.finishedAt)) }))
    .filter((t) => t.received >= from && t.received < to)
    .map((t) => t.finished - t.received);
}

function summary(values: readonly number[]): { n: number; p50: number; p95: number; max: number } {
  return {
    n: values.length,
    p50: percentile(values, 50),
    p95: percentile(values, 95),
    max: Math.max(...values),
  };
}

test('EC-P256 latency is unchanged while the RSA-2048 pool is drained; RSA requests beyond what keys serve are refused before acceptance, every accepted one signed, none stuck', async () => {
  const { url, apiKey } = fault.pipeline;
  const ecCount = EC_RATE * (WARMUP_S + BEFORE_S + DRAIN_S);
  const rsaCount = RSA_RATE * DRAIN_S;
  // Logged in before the load starts: the local OpenID Provider shares the cores.
  const ecRequests = await sampleRequests(ecCount, (i) => sampleRequest('EC-P256', i));
  const rsaRequests = await sampleRequests(rsaCount, (i) => sampleRequest('RSA-2048', i));

  const start = Date.now() + 500;
  const drainStart = start + (WARMUP_S + BEFORE_S) * 1000;
  const [{ sent: ec, notAccepted: ecNotAccepted }, { sent: rsa, notAccepted: rsaNotAccepted }] =
    await Promise.all([
      openLoop(ecRequests, EC_RATE, start, apiKey),
      openLoop(rsaRequests, RSA_RATE, drainStart, DRAINER.apiKey),
    ]);
  expect(ecNotAccepted).toBe(0);
  const rsaRefusals = rsa.flatMap((s) => s.refusals).map((r) => `${r.status} ${r.code}`);
  const end = Date.now();
  const views = new Map([
    ...(await waitForTerminal(
      url,
      apiKey,
      ec.map((s) => s.id),
      end + 60_000,
    )),
    ...(await waitForTerminal(
      url,
      DRAINER.apiKey,
      rsa.map((s) => s.id),
      end + 60_000,
    )),
  ]);

  // Every request ended, and every signed one verifies; none failed.
  await expectAllEnded(fault.pipeline, [...ec, ...rsa], views);
  const ecFailed = ec.filter((s) => views.get(s.id)!.status !== 'signed');
  expect(ecFailed.map((s) => views.get(s.id)!.error?.code)).toEqual([]);
  const rsaViews = rsa.map((s) => views.get(s.id)!);
  const rsaOutcome = {
    pooled: rsaViews.filter((v) => v.status === 'signed' && v.pooledKey).length,
    onTheFly: rsaViews.filter((v) => v.status === 'signed' && !v.pooledKey).length,
    poolEmpty: rsaViews.filter((v) => v.error?.code === 'POOL_EMPTY').length,
    other: rsaViews
      .filter((v) => v.status === 'failed' && v.error?.code !== 'POOL_EMPTY')
      .map((v) => v.error),
  };

  const before = summary(latencies(ec, views, start + WARMUP_S * 1000, drainStart));
  const drained = summary(latencies(ec, views, drainStart + DRAINED_AFTER_S * 1000, end));
  const rsaLatency = summary(latencies(rsa, views, drainStart, end));
  console.log(
    `EC-P256 ms before ${JSON.stringify(before)}, RSA-2048 pool drained ${JSON.stringify(drained)}; ` +
      `RSA-2048 ${JSON.stringify(rsaOutcome)}, ms ${JSON.stringify(rsaLatency)}, ${rsaNotAccepted} never accepted, ` +
      `refusals ${JSON.stringify(tally(rsaRefusals))} ` +
      `(POOL_FALLBACK_MAX_IN_FLIGHT=${fault.pipeline.env.POOL_FALLBACK_MAX_IN_FLIGHT})`,
  );

  // Generous, for a 2-core machine shared with other work at a higher priority (measured: +30 ms on the
  // p50 when quiet, +500 ms when not), and still well below what unbounded RSA generation does to
  // EC-P256 (measured on a quiet machine: p50 3.9 s, p95 6.2 s).
  expect(drained.p50).toBeLessThanOrEqual(Math.max(2 * before.p50, before.p50 + 1000));
  expect(drained.p95).toBeLessThanOrEqual(Math.max(3 * before.p95, before.p95 + 2500));
  expect(rsaOutcome.other).toEqual([]);
  expect(rsaOutcome.pooled).toBeLessThanOrEqual(RSA_POOL);
  expect(rsaOutcome.onTheFly).toBeGreaterThan(0);
  // More RSA requests came than keys could serve in time: the API refused them before accepting (the
  // drainer holds its share: 429 CLIENT_SHARE_EXCEEDED), and no accepted one failed for want of a key.
  expect(rsaRefusals.length + rsaNotAccepted).toBeGreaterThan(0);
  expect(rsaRefusals).toContain('429 CLIENT_SHARE_EXCEEDED');
  expect(rsaOutcome.poolEmpty).toBe(0);
});
