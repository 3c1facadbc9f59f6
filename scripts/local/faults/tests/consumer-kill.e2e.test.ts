/**
 * SIGKILL of signer consumer processes at random moments while requests flow over HTTP, each killed
 * consumer replaced by a new one. Afterwards: every accepted request is signed or failed with a reason,
 * no request has two certificates, no pool key served two requests (from the audit log, which must verify
 * intact), and the HSM holds nothing extra (token objects unchanged; surviving consumers hold no session
 * objects; a killed process's session objects die with its sessions).
 */
import { sampleRequest, sampleRequests, type SampleRequest } from '../../client';
import {
  expectAllEnded,
  expectNoneDuplicated,
  liveConsumers,
  restoreTruncatedTokenFiles,
  runAll,
  scanCertificates,
  seededRandom,
  sigkillConsumer,
  sleep,
  snapshotTokenFiles,
  startFaultPipeline,
  stopConsumersAndCountSessionObjects,
  submit,
  tokenObjectFiles,
  waitForTerminal,
  type FaultPipeline,
  requeuedIds,
  supersededChains,
} from '../harness';

jest.setTimeout(300_000);

const REQUESTS = 120;
const KILLS = 6;
// The last delivery waits out a live lease. So a kill may cost a request its deliveries, or, when it
// landed after the attempt logged its signature and before its result was stored, the request: that
// signature may have left, so the takeover gets no replacement and ends ALREADY_CERTIFIED. A kill between
// the certificate and the logged signature costs nothing: the takeover gets a replacement (and so does a
// takeover of that takeover, when a second kill hits it there too).
const TAKEOVER_FAILURES = new Set(['DELIVERY_EXHAUSTED', 'ALREADY_CERTIFIED']);
// Keys leave the pool for the requests and with every consumer that claimed a bundle (10 keys, the
// default POOL_BUNDLE_SIZE): each killed one, and the two that end the run. A pool that covers all of it
// keeps POOL_EMPTY out of this test (on-the-fly generation is for pool-drain tests), with room for keys
// discarded by taken-over attempts.
const POOL_KEYS = REQUESTS + (KILLS + 2) * 10 + 20;
let fault: FaultPipeline;
const tokenFiles = snapshotTokenFiles();

beforeAll(async () => {
  fault = await startFaultPipeline({
    env: { POOL_TARGETS: `EC-P256=${POOL_KEYS}`, LOCAL_CONSUMERS: '2', LOCAL_POLLER_CONCURRENCY: '2' },
  });
  await fault.pipeline.runKeygen();
});

afterAll(async () => {
  await fault?.stop();
  restoreTruncatedTokenFiles(tokenFiles);
});

test('consumers SIGKILLed mid-flow: all requests end, none signed twice, no key used twice, HSM clean', async () => {
  const { pipeline } = fault;
  const tokenBefore = tokenObjectFiles();
  const requests: SampleRequest[] = await sampleRequests(REQUESTS, (i) => sampleRequest('EC-P256', i));

  // Requests arrive at about 8/s while a killer SIGKILLs a random consumer whose signer is up every
  // 0.4-1.6 s and starts a replacement (as Lambda replaces a crashed execution environment). It goes on
  // until it has killed KILLS, and at least 3 before the last request is in.
  let submitting = true;
  const kills: number[] = [];
  // The kill times still depend on the machine's pace, so the counts below are bounds, not exact.
  const random = seededRandom();
  console.log(`consumer kill: FAULTS_SEED=${random.seed}`);
  const killer = (async () => {
    while (kills.length < KILLS && (submitting || kills.length < 3)) {
      await sleep(400 + random() * 1200);
      // Only consumers logged in to the HSM: SoftHSM rewrites its token file on every login, and a
      // SIGKILL during that write would truncate it (the token would be lost, not just a process).
      const running = liveConsumers(pipeline).filter((c) => c.isReady());
      if (running.length === 0) continue;
      const victim = running[Math.floor(random() * running.length)];
      kills.push((await sigkillConsumer(victim)).length);
      pipeline.startConsumer();
    }
  })();
  const deadline = Date.now() + 120_000;
  const submitted = await runAll(requests, 4, async (request) => {
    const s = await submit(pipeline.url, pipeline.apiKey, request, deadline);
    await sleep(500);
    return s;
  });
  submitting = false;
  await killer;
  // Each kill took the signer process (the consumer is the node process running the handler).
  expect(kills.length).toBeGreaterThanOrEqual(3);
  expect(kills.every((processes) => processes >= 1)).toBe(true);
  const ids = submitted.map((s) => s.id);
  expect(new Set(ids).size).toBe(REQUESTS);

  // Leases (4 s) and visibility timeouts (3 s) bring the killed consumers' work back; allow for a few
  // rounds of redelivery and the replacements' start-up.
  const views = await waitForTerminal(pipeline.url, pipeline.apiKey, ids, Date.now() + 120_000);
  const signed = await expectAllEnded(pipeline, submitted, views);
  // A kill may only cost a request its deliveries: any other failure code is a defect.
  const failedCodes = ids.map((id) => views.get(id)!).filter((v) => v.status === 'failed');
  expect(failedCodes.filter((v) => !TAKEOVER_FAILURES.has(v.error!.code))).toEqual([]);
  // ALREADY_CERTIFIED only where the CA had issued the request's certificate, released to an attempt
  // (that it refused a replacement for a signature in the log is checked below, from the log).
  const scanned = await scanCertificates(fault.doc);
  const recorded = new Map(scanned.byRequest.map((c) => [c.requestId, c]));
  const refused = failedCodes.filter((v) => v.error!.code === 'ALREADY_CERTIFIED').map((v) => v.id);
  expect(refused.filter((id) => !recorded.get(id)?.releasedAt || !recorded.get(id)?.attemptId)).toEqual([]);
  // A replaced certificate's request signed with its last replacement: the crashes cost it nothing; or,
  // when a later kill landed after that attempt logged its signature, ALREADY_CERTIFIED (as above).
  const replaced = supersededChains(scanned);
  expect(
    replaced.filter((c) =>
      views.get(c.requestId)?.status === 'signed'
        ? views.get(c.requestId)?.certificateSerial !== c.serials.at(-1)
        : !refused.includes(c.requestId),
    ),
  ).toEqual([]);
  expect(signed.length).toBeGreaterThanOrEqual(REQUESTS / 2);
  // The queue alone brought every killed attempt's work back: no message was lost, so the reconciler (a
  // backstop that would hide such a loss) requeued nothing.
  expect(await requeuedIds(fault, ids)).toEqual([]);

  // None signed twice, no pool key served two requests (from the tamper-evident log, which verifies).
  const events = await expectNoneDuplicated(fault.doc, signed, views);
  const pooledSigned = signed.filter((s) => views.get(s.id)!.pooledKey).map((s) => s.id);
  const signatureEvents = new Set(
    events.flatMap((e) => (e.type === 'signature.made' && e.keyId ? [e.requestId] : [])),
  );
  // ALREADY_CERTIFIED after a takeover only on evidence: a signature of the request in the log.
  const signedInLog = new Set(events.flatMap((e) => (e.type === 'signature.made' ? [e.requestId] : [])));
  expect(refused.filter((id) => !signedInLog.has(id))).toEqual([]);
  // The check is only worth something if the log saw the signatures: every pooled signed request's.
  expect(pooledSigned.length).toBeGreaterThan(0);
  expect(pooledSigned.filter((id) => !signatureEvents.has(id))).toEqual([]);

  if (process.env.FAULTS_VERBOSE) {
    const failed = REQUESTS - signed.length;
    console.log(
      `kills ${JSON.stringify(kills)}; signed ${signed.length} (pooled ${pooledSigned.length}, replaced ${replaced.length}), failed ${failed} ` +
        `(${failedCodes.map((v) => v.error!.code).join(', ')}); audit ${events.length} events`,
    );
  }

  // HSM: the surviving consumers destroyed every key they unwrapped; the token gained and lost nothing.
  const sessionObjects = await stopConsumersAndCountSessionObjects(fault);
  expect(sessionObjects.length).toBeGreaterThanOrEqual(1);
  expect(sessionObjects.every((n) => n === 0)).toBe(true);
  expect(tokenObjectFiles()).toEqual(tokenBefore);
  // No kill landed in a login's rewrite of the token file.
  expect(restoreTruncatedTokenFiles(tokenFiles)).toEqual([]);
});
