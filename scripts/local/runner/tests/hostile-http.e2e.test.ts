/**
 * The whole local pipeline under hostile input and injected HSM faults, with a known PIN and every log
 * line captured: no 5xx and no crash for generated hostile requests, every request ends terminal with a
 * reason, a poison message is dead-lettered (and can be re-driven), and the PIN appears in no log line
 * of any process.
 */
import { readFileSync } from 'node:fs';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import fc from 'fast-check';
import { sqsClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { redrive } from '../../../redrive-dlq';
import { hostileBody } from '../../../../lambdas/api/tests/arbitraries';
import { call, sampleRequest, sampleRequests, type SignRequestView } from '../../client';
import { localToken } from '../../token';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

jest.setTimeout(300_000);

const PIN = readFileSync(localToken().userPinFile, 'utf8').trim();
const lines: string[] = [];
let pipeline: LocalPipeline;
const restore: Array<() => void> = [];

beforeAll(async () => {
  // Capture this process's own output too: the API, CA and keygen functions log here.
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream);
    stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      lines.push(String(chunk));
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
    restore.push(() => (stream.write = write));
  }
  pipeline = await startLocalPipeline({
    resourcePrefix: `hostile-${Date.now().toString(36)}-`,
    log: (line) => lines.push(line),
    env: {
      PORT: '0',
      // The known PIN travels the way an operator would set it, and logging is as verbose as it gets.
      HSM_PIN: PIN,
      HSM_PIN_SOURCE: 'env:HSM_PIN',
      LOG_LEVEL: 'DEBUG',
      POWERTOOLS_METRICS_DISABLED: 'false',
      HSM_FAULT_RATE: '0.15',
      HSM_FAULT_OPERATIONS: 'unwrapPrivateKey,signDigest',
      POOL_TARGETS: 'EC-P256=40',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      // Failed deliveries come back after a second, so a poison message reaches the DLQ within the test.
      LOCAL_VISIBILITY_TIMEOUT_SECONDS: '1',
    },
  });
  await pipeline.runKeygen();
});

afterAll(async () => {
  await pipeline?.stop();
  for (const undo of restore) undo();
});

test('hostile requests over HTTP: never a 5xx, every 4xx has a code and a message', async () => {
  await fc.assert(
    fc.asyncProperty(hostileBody(), async (body) => {
      const res = await call<{ error?: { code: string; message: string } }>(`${pipeline.url}/sign-requests`, {
        apiKey: pipeline.apiKey,
        rawBody: body,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBeLessThan(500);
      if (res.status >= 400) {
        expect(res.body.error?.code).toMatch(/^[A-Z_]+$/);
        expect(res.body.error?.message.length).toBeGreaterThan(0);
      }
    }),
    { numRuns: 300 },
  );
});

test('with HSM faults injected every accepted request still ends signed or failed with a reason', async () => {
  const requests = await sampleRequests(40, (i) => sampleRequest(i % 4 === 0 ? 'RSA-2048' : 'EC-P256', i));
  const ids = await Promise.all(
    requests.map(async (r) => {
      const res = await call<{ id: string }>(`${pipeline.url}/sign-requests`, {
        apiKey: pipeline.apiKey,
        body: r.body,
      });
      expect(res.status).toBe(202);
      return res.body.id;
    }),
  );
  const views = await Promise.all(
    ids.map(async (id) => {
      for (;;) {
        const res = await call<SignRequestView>(`${pipeline.url}/sign-requests/${id}?wait=20`, {
          apiKey: pipeline.apiKey,
        });
        if (res.body.status === 'signed' || res.body.status === 'failed') return res.body;
      }
    }),
  );
  for (const view of views) {
    if (view.status === 'failed') expect(view.error?.code).toMatch(/^[A-Z_]+$/);
    else expect(view.signature).toBeDefined();
  }
  // Faults were really injected (some failures) and the service still did its work (some successes).
  expect(views.some((v) => v.status === 'signed')).toBe(true);
  expect(lines.join('\n')).toMatch(/INJECTED_FAULT/);
  // Log lines carry the Lambda context of their invocation (Powertools logger with the context added).
  const signerLine = lines
    .join('\n')
    .match(/\{[^\n]*"service":"signer"[^\n]*"function_name":"signer"[^\n]*\}/);
  expect(signerLine).not.toBeNull();
  expect(JSON.parse(signerLine![0])).toMatchObject({
    cold_start: expect.any(Boolean),
    function_request_id: expect.any(String),
  });
});

test('a poison message ends in the dead-letter queue after maxReceiveCount deliveries; redrive moves it back', async () => {
  const sqs = sqsClient(loadAwsConfig(process.env));
  await sqs.send(new SendMessageCommand({ QueueUrl: pipeline.queueUrl, MessageBody: 'not-a-request-id' }));
  const deadline = Date.now() + 60_000;
  let depth = 0;
  while (Date.now() < deadline && depth === 0) {
    await new Promise((r) => setTimeout(r, 1000));
    const attrs = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: pipeline.deadLetterQueueUrl,
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    depth = Number(attrs.Attributes?.ApproximateNumberOfMessages ?? 0);
  }
  expect(depth).toBe(1);
  expect(lines.join('\n')).toMatch(/PoisonMessageError/);
  const moved = await redrive(sqs, pipeline.deadLetterQueueUrl, pipeline.queueUrl, { max: 10 });
  expect(moved).toEqual({ moved: 1, seen: 1 });
});

test('the PIN appears in no log line of any process', () => {
  expect(lines.length).toBeGreaterThan(100);
  const leaking = lines.filter((line) => line.includes(PIN));
  expect(leaking).toEqual([]);
});
