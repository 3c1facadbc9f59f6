/**
 * DynamoDB Local and then ElasticMQ stopped and restarted (same port, data kept) while requests flow.
 * The client retries refused submissions with the same requestId, as an e-service would. Afterwards:
 * every request was accepted and ended signed or failed with a reason (none lost), none has two
 * certificates and no pool key served two requests (none duplicated), the audit log verifies intact, and
 * the outage was really felt (refused submissions).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sampleRequest, verifySignedResult, type SampleRequest } from '../../client';
import { LOCAL_DIR } from '../../paths';
import type { StandInName } from '../../stand-ins';
import {
  duplicates,
  keysUsedTwice,
  readAudit,
  runAll,
  scanCertificates,
  sleep,
  startFaultPipeline,
  submit,
  tally,
  waitForTerminal,
  type FaultPipeline,
} from '../harness';

jest.setTimeout(400_000);

const REQUESTS = 80;
let fault: FaultPipeline;

beforeAll(async () => {
  fault = await startFaultPipeline({
    ownStandIns: true,
    env: { POOL_TARGETS: 'EC-P256=120', LOCAL_CONSUMERS: '2', LOCAL_POLLER_CONCURRENCY: '2' },
  });
  await fault.pipeline.runKeygen();
});

afterAll(async () => {
  await fault?.stop();
});

test('DynamoDB Local and ElasticMQ restarted mid-run: requests delayed or failed with a reason, none lost, none duplicated', async () => {
  const { pipeline } = fault;
  const standIns = fault.standIns!;
  const requests: SampleRequest[] = Array.from({ length: REQUESTS }, (_, i) =>
    sampleRequest('EC-P256', i, { requestId: true }),
  );

  // Each outage lasts a few seconds plus the stand-in's own start-up (several seconds on a busy machine).
  const outages: Array<{ name: StandInName; downMs: number }> = [];
  const outage = async (name: StandInName): Promise<void> => {
    await standIns.stopService(name);
    const down = Date.now();
    await sleep(3000);
    await standIns.startService(name);
    outages.push({ name, downMs: Date.now() - down });
  };
  let submitting = true;
  const chaos = (async () => {
    await sleep(1500);
    await outage('DynamoDB Local');
    await sleep(1500);
    if (submitting) await outage('ElasticMQ');
  })();
  const submitted = await runAll(requests, 4, async (request) => {
    const s = await submit(pipeline.url, pipeline.apiKey, request, Date.now() + 120_000);
    await sleep(300);
    return s;
  });
  submitting = false;
  await chaos;
  expect(outages.map((o) => o.name)).toEqual(['DynamoDB Local', 'ElasticMQ']);
  const ids = submitted.map((s) => s.id);
  expect(new Set(ids).size).toBe(REQUESTS);
  expect(ids).toEqual(requests.map((r) => r.body.requestId));
  // The outages reached the request path: some submissions were refused (503) and retried.
  const refusals = submitted.flatMap((s) => s.refusals);
  expect(refusals.length).toBeGreaterThan(0);
  // A refusal is an HTTP answer with a code, or a connection the gateway could not serve (status 0).
  expect(refusals.filter((r) => r.status !== 0 && !r.code)).toEqual([]);

  // None lost: every accepted request reaches a terminal state once the stand-ins are back.
  const views = await waitForTerminal(pipeline.url, pipeline.apiKey, ids, Date.now() + 150_000);
  const notTerminal = ids.filter((id) => !['signed', 'failed'].includes(views.get(id)?.status ?? ''));
  expect(notTerminal).toEqual([]);
  const failedWithoutReason = ids.filter((id) => {
    const v = views.get(id)!;
    return v.status === 'failed' && !(v.error?.code && v.error.message);
  });
  expect(failedWithoutReason).toEqual([]);

  const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
  const signed = submitted.filter((s) => views.get(s.id)!.status === 'signed');
  const bad = signed
    .map((s) => ({ id: s.id, ...verifySignedResult(s.request, views.get(s.id)!, rootPem) }))
    .filter((r) => !r.ok);
  expect(bad).toEqual([]);
  expect(signed.length).toBeGreaterThanOrEqual(REQUESTS * 0.8);

  // None duplicated: one certificate per request, the one the client got, and no key used twice.
  const certificates = await scanCertificates(fault.doc);
  expect(duplicates(certificates.serials.map((c) => c.requestId))).toEqual({});
  const recorded = new Map(certificates.byRequest.map((c) => [c.requestId, c.certificatePem]));
  const mismatched = signed.filter(
    (s) => recorded.get(s.id)?.trim() !== views.get(s.id)!.certificate?.trim(),
  );
  expect(mismatched.map((s) => s.id)).toEqual([]);
  const audit = await readAudit(fault.doc);
  expect(audit.report.issues).toEqual([]);
  expect(audit.report.intact).toBe(true);
  expect(keysUsedTwice(audit.events)).toEqual({});
  const signatureEvents = audit.events.filter((e) => e.type === 'signature.made');
  expect(signatureEvents.length).toBeGreaterThanOrEqual(signed.length);

  if (process.env.FAULTS_VERBOSE) {
    const outcomes = tally([...views.values()].map((v) => v?.error?.code ?? v?.status ?? 'unknown'));
    const refused = tally(refusals.map((r) => `${r.status}:${r.code ?? ''}`));
    console.log(
      `outages ${JSON.stringify(outages)}; refusals ${JSON.stringify(refused)}; outcomes ${JSON.stringify(outcomes)}`,
    );
  }
});
