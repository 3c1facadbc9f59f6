/**
 * One client cannot drain a key type for everyone, and no accepted request fails for want of a key,
 * against the running local pipeline. A client floods EC-P384 requests (40 at once, each with its own
 * fresh assertion, as a client that mints request objects can) into a small pool whose on-the-fly
 * generation is slow (1 s a key, one at a time); meanwhile a second client sends a few requests, as a
 * well-behaved e-service does (retrying 429/503 after a moment).
 *
 * Without admission every flood request is accepted: the pool is gone at once, the on-the-fly bound
 * refuses most of them (failed POOL_EMPTY after acceptance) and the second client's requests wait behind
 * the flood and fail the same way. With it the flooder gets at most its share (429
 * CLIENT_SHARE_EXCEEDED beyond it), the second client's requests are accepted and signed, and every
 * request the API accepted is signed.
 */
import { randomBytes } from 'node:crypto';
import { call, sampleRequest, sampleRequests, type SignRequestView } from '../../client';
import {
  expectAllEnded,
  runAll,
  sleep,
  startFaultPipeline,
  submit,
  waitForTerminal,
  type FaultPipeline,
  type Submitted,
} from '../../faults/harness';

jest.setTimeout(180_000);

const FLOOD = 40;
const VICTIM_REQUESTS = 3;
const POOL = 6;
const ON_THE_FLY = 6;
const RESERVE = 3;
const FLOODER = { clientId: 'flooder', apiKey: `flooder-${randomBytes(8).toString('hex')}` };
const VICTIM = { clientId: 'victim', apiKey: `victim-${randomBytes(8).toString('hex')}` };

let fault: FaultPipeline;

beforeAll(async () => {
  fault = await startFaultPipeline({
    env: {
      POOL_TARGETS: `EC-P384=${POOL}`,
      POOL_BUNDLE_SIZE: '2',
      POOL_EMPTY_POLICY: 'fallback',
      POOL_FALLBACK_MAX_IN_FLIGHT: '1',
      POOL_FALLBACK_WAIT_MS: '2000',
      POOL_ADMISSION_ON_THE_FLY: String(ON_THE_FLY),
      POOL_CLIENT_RESERVE: String(RESERVE),
      // A request without a key comes back after 2 s (plus the hold's margin).
      POOL_RETRY_AFTER_SECONDS: '2',
      HSM_KEYGEN_LATENCY_MS: 'EC-P384=1000',
      LOCAL_CONSUMERS: '1',
      LOCAL_API_CLIENTS: `${FLOODER.clientId}:${FLOODER.apiKey},${VICTIM.clientId}:${VICTIM.apiKey}`,
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '20',
      SIGN_ATTEMPT_LEASE_SECONDS: '15',
    },
  });
  await fault.pipeline.runKeygen();
});

afterAll(async () => {
  await fault?.stop();
});

test("a flooding client gets its share (429 CLIENT_SHARE_EXCEEDED beyond it); another client's requests are accepted and signed; no accepted request fails", async () => {
  const { url } = fault.pipeline;
  const health = await call<{ pool: Record<string, number> }>(`${url}/health`, { apiKey: VICTIM.apiKey });
  expect(health.body.pool['EC-P384']).toBe(POOL);
  const flood = await sampleRequests(FLOOD, (i) => sampleRequest('EC-P384', i));
  const mine = await sampleRequests(VICTIM_REQUESTS, (i) => sampleRequest('EC-P384', 1000 + i));

  // The flood: every request at once, sent once (the flooder does not care for its refusals).
  const flooding = runAll(flood, FLOOD, async (request) => {
    const res = await call<{ id: string; error?: { code: string } }>(`${url}/sign-requests`, {
      apiKey: FLOODER.apiKey,
      body: request.body,
    });
    return {
      request,
      status: res.status,
      id: res.body.id,
      code: res.body.error?.code,
      retryAfter: res.headers.get('retry-after'),
    };
  });
  await sleep(300);
  const victim: Submitted[] = await runAll(mine, VICTIM_REQUESTS, (request) =>
    submit(url, VICTIM.apiKey, request, Date.now() + 30_000),
  );
  const flooded = await flooding;

  const acceptedFlood = flooded.filter((r) => r.status === 202);
  const refusedFlood = flooded.filter((r) => r.status !== 202);
  const views = new Map([
    ...(await waitForTerminal(
      url,
      FLOODER.apiKey,
      acceptedFlood.map((r) => r.id),
      Date.now() + 90_000,
    )),
    ...(await waitForTerminal(
      url,
      VICTIM.apiKey,
      victim.map((s) => s.id),
      Date.now() + 90_000,
    )),
  ]);
  const outcome = (ids: readonly string[]): Record<string, number> => {
    const counts: Record<string, number> = {};
    for (const id of ids) {
      const v: SignRequestView | undefined = views.get(id);
      const key = v?.status === 'failed' ? `failed ${v.error?.code}` : (v?.status ?? 'unknown');
      counts[key] = (counts[key] ?? 0) + 1;
    }
    return counts;
  };
  console.log(
    `flood: ${acceptedFlood.length} of ${FLOOD} accepted ${JSON.stringify(outcome(acceptedFlood.map((r) => r.id)))}, ` +
      `refused ${JSON.stringify(refusedFlood.map((r) => `${r.status} ${r.code}`).sort())}; ` +
      `victim: ${JSON.stringify(outcome(victim.map((s) => s.id)))}, refusals before acceptance ${JSON.stringify(victim.map((s) => s.refusals.map((r) => r.code)))}`,
  );

  // The flooder never held more open requests than the capacity less the reserve (more may be accepted
  // in all when the flood arrives slowly: a request signed on the fly gives its place back), and was told
  // why, with a Retry-After.
  expect(mostOpenAtOnce(acceptedFlood.map((r) => views.get(r.id)))).toBeLessThanOrEqual(
    POOL + ON_THE_FLY - RESERVE,
  );
  expect(refusedFlood.length).toBeGreaterThan(0);
  for (const r of refusedFlood) {
    expect([r.status, r.code, Number(r.retryAfter)]).toEqual([429, 'CLIENT_SHARE_EXCEEDED', 2]);
  }
  // The other client's requests were accepted and signed.
  expect(outcome(victim.map((s) => s.id))).toEqual({ signed: VICTIM_REQUESTS });
  // Every accepted request was signed: none failed for want of a key.
  expect(outcome(acceptedFlood.map((r) => r.id))).toEqual({ signed: acceptedFlood.length });
  // Each signed result verifies (signature, certificate for the citizen, chain to the local root).
  await expectAllEnded(
    fault.pipeline,
    [...victim, ...acceptedFlood.map((r) => ({ request: r.request, id: r.id, refusals: [] }))],
    views,
  );
});

/** The most requests open at one moment: each is open from its receipt until it ended. */
function mostOpenAtOnce(views: readonly (SignRequestView | undefined)[]): number {
  const edges = views.flatMap((v) => {
    const from = Date.parse(String(v?.timings.receivedAt));
    const to = Date.parse(String(v?.timings.finishedAt));
    if (!Number.isFinite(from) || !Number.isFinite(to))
      throw new Error(`request ${v?.id} has no receipt or end time`);
    return [
      { at: from, delta: 1 },
      { at: to, delta: -1 },
    ];
  });
  // At one instant an end goes before a receipt: the place given back is the one taken.
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let open = 0;
  let most = 0;
  for (const e of edges) {
    open += e.delta;
    most = Math.max(most, open);
  }
  return most;
}
