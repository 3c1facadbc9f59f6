/**
 * Messages lost behind the pipeline's back: with no consumer running, requests are accepted and then the
 * queue is purged, one of them left `signing` by an attempt that died. Nothing in the queue will ever
 * deliver them; the reconciler schedule finds them quiet (RECONCILE_STALE_AFTER_SECONDS) and sends each a
 * fresh message. Afterwards every request is signed, each requeued exactly once, none signed twice, no
 * pool key used twice, and nothing dead-lettered.
 */
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { sqsClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { sampleRequest, sampleRequests } from '../../client';
import {
  expectAllEnded,
  expectNoneDuplicated,
  liveConsumers,
  queueDepths,
  runAll,
  sigkillConsumer,
  startFaultPipeline,
  submit,
  waitForTerminal,
  type FaultPipeline,
} from '../harness';

jest.setTimeout(240_000);

const REQUESTS = 12;
let fault: FaultPipeline;

beforeAll(async () => {
  fault = await startFaultPipeline({ env: { POOL_TARGETS: 'EC-P256=20', LOCAL_CONSUMERS: '1' } });
  await fault.pipeline.runKeygen();
});

afterAll(async () => {
  await fault?.stop();
});

test('requests whose messages were lost are requeued by the reconciler and signed once', async () => {
  const { pipeline } = fault;
  // No consumer: the messages stay in the queue until they are purged.
  for (const consumer of liveConsumers(pipeline)) await sigkillConsumer(consumer);
  const requests = await sampleRequests(REQUESTS, (i) => sampleRequest('EC-P256', i));
  const deadline = Date.now() + 60_000;
  const submitted = await runAll(requests, 4, (request) =>
    submit(pipeline.url, pipeline.apiKey, request, deadline),
  );
  const ids = submitted.map((s) => s.id);

  // One request was taken by an attempt that died at once (its lease ends in a second).
  const store = fault.requests;
  const now = Date.now();
  expect(
    await store.startAttempt(ids[0], { attemptId: 'died', startedAt: now, leaseUntil: now + 1000 }),
  ).toBeDefined();

  const sqs = sqsClient(loadAwsConfig(process.env));
  await sqs.send(new PurgeQueueCommand({ QueueUrl: pipeline.queueUrl })).finally(() => sqs.destroy());
  expect((await queueDepths(pipeline)).queue).toBe('0+0 in flight');
  pipeline.startConsumer();

  const views = await waitForTerminal(pipeline.url, pipeline.apiKey, ids, Date.now() + 150_000);
  const signed = await expectAllEnded(pipeline, submitted, views);
  expect(signed.map((s) => s.id)).toEqual(ids);
  for (const id of ids) expect((await store.get(id))?.requeues).toBe(1);
  expect((await store.get(ids[0]))?.attempts).toBe(2);
  await expectNoneDuplicated(fault.doc, signed, views);
  expect((await queueDepths(pipeline)).deadLetter).toBe('0');
});
