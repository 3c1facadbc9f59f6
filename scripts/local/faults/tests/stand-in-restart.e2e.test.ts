/**
 * DynamoDB Local and then ElasticMQ stopped and restarted (same port, data kept) while requests flow.
 * The client retries refused submissions with the same requestId, as an e-service would. Afterwards:
 * every request was accepted and ended signed or failed with a reason (none lost), none has two
 * certificates and no pool key served two requests (none duplicated), the audit log verifies intact, the
 * outages were really felt (refused submissions), and everything submitted after them is signed.
 */
import { sampleRequest, sampleRequests, type SampleRequest } from '../../client';
import type { StandInName } from '../../stand-ins';
import {
  expectAllEnded,
  expectNoneDuplicated,
  runAll,
  sleep,
  startFaultPipeline,
  submit,
  tally,
  waitForTerminal,
  type FaultPipeline,
  type Submitted,
  requeuedIds,
} from '../harness';

jest.setTimeout(400_000);

const REQUESTS = 60;
let fault: FaultPipeline;

beforeAll(async () => {
  fault = await startFaultPipeline({
    ownStandIns: true,
    env: {
      POOL_TARGETS: 'EC-P256=90',
      LOCAL_CONSUMERS: '2',
      LOCAL_POLLER_CONCURRENCY: '2',
      // An attempt cut off by an outage is taken over once its lease ends; the lease stays well inside the
      // deliveries a message has (4 s visibility x 5 receives), so the last delivery can still end it.
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '4',
      SIGN_ATTEMPT_LEASE_SECONDS: '8',
    },
  });
  await fault.pipeline.runKeygen();
});

afterAll(async () => {
  await fault?.stop();
});

test('DynamoDB Local and ElasticMQ restarted mid-run: requests delayed or failed with a reason, none lost, none duplicated', async () => {
  const { pipeline } = fault;
  const standIns = fault.standIns!;
  const requests: SampleRequest[] = await sampleRequests(REQUESTS, (i) => sampleRequest('EC-P256', i));

  // Three batches: one meets a DynamoDB Local outage, one an ElasticMQ outage, one comes after both.
  // Each outage lasts a few seconds plus the stand-in's own start-up (several seconds on a busy machine).
  const outages: Array<{ name: StandInName; downMs: number }> = [];
  const submitBatch = (batch: readonly SampleRequest[]): Promise<Submitted[]> =>
    runAll(batch, 4, async (request) => {
      const s = await submit(pipeline.url, pipeline.apiKey, request, Date.now() + 120_000);
      await sleep(400);
      return s;
    });
  const duringOutage = async (name: StandInName, batch: readonly SampleRequest[]): Promise<Submitted[]> => {
    const submitting = submitBatch(batch);
    await sleep(1000);
    await standIns.stopService(name);
    const down = Date.now();
    await sleep(2000);
    await standIns.startService(name);
    outages.push({ name, downMs: Date.now() - down });
    return submitting;
  };
  const third = Math.floor(REQUESTS / 3);
  const submitted = [
    ...(await duringOutage('DynamoDB Local', requests.slice(0, third))),
    ...(await duringOutage('ElasticMQ', requests.slice(third, 2 * third))),
  ];
  const afterOutages = await submitBatch(requests.slice(2 * third));
  submitted.push(...afterOutages);
  expect(outages.map((o) => o.name)).toEqual(['DynamoDB Local', 'ElasticMQ']);
  const ids = submitted.map((s) => s.id);
  expect(new Set(ids).size).toBe(REQUESTS);
  expect(ids).toEqual(requests.map((r) => r.body.requestId));
  // The outages reached the request path: some submissions were refused (503) and retried.
  const refusals = submitted.flatMap((s) => s.refusals);
  expect(refusals.length).toBeGreaterThan(0);
  // A refusal is an HTTP answer with a code, or a connection the gateway could not serve (status 0).
  expect(refusals.filter((r) => r.status !== 0 && !r.code)).toEqual([]);

  // None lost: every accepted request reaches a terminal state once the stand-ins are back, with no help
  // from the client. ElasticMQ writes messages to its store a moment after it acknowledges them, so a
  // message sent just before a stop can be lost with it; the reconciler finds such a request quiet in
  // `received` and sends it a fresh message.
  const views = await waitForTerminal(pipeline.url, pipeline.apiKey, ids, Date.now() + 150_000);
  const signed = await expectAllEnded(pipeline, submitted, views);
  // Only the ElasticMQ outage's batch may have needed the reconciler: a request of another batch that
  // was requeued lost its message some other way.
  const requeued = await requeuedIds(fault, ids);
  expect(requeued.filter((id) => Math.floor(ids.indexOf(id) / third) !== 1)).toEqual([]);
  // Service recovers: everything submitted once both stand-ins were back is signed.
  expect(
    afterOutages.filter((s) => views.get(s.id)!.status !== 'signed').map((s) => views.get(s.id)),
  ).toEqual([]);
  expect(signed.length).toBeGreaterThanOrEqual(REQUESTS / 2);

  // None duplicated: one certificate per request, the one the client got, and no key used twice.
  const events = await expectNoneDuplicated(fault.doc, signed, views);
  const signatureEvents = events.filter((e) => e.type === 'signature.made');
  expect(signatureEvents.length).toBeGreaterThanOrEqual(signed.length);

  if (process.env.FAULTS_VERBOSE) {
    const outcomes = tally([...views.values()].map((v) => v?.error?.code ?? v?.status ?? 'unknown'));
    const refused = tally(refusals.map((r) => `${r.status}:${r.code ?? ''}`));
    console.log(
      `outages ${JSON.stringify(outages)}; refusals ${JSON.stringify(refused)}; outcomes ${JSON.stringify(outcomes)}` +
        `; requeued by the reconciler ${requeued.length}`,
    );
  }
});
