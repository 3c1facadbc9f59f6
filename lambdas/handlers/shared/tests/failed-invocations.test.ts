/**
 * The functions with metrics report their figures in every invocation, a failed one included: the
 * alarms read them, and Powertools would warn on an empty flush. Each factory runs here with a
 * dependency that fails (no AWS, no HSM: the figures are the handler's own logic).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSEvent } from 'aws-lambda';
import pLimit from 'p-limit';
import { restoreEnvAfterAll } from '../../../test-support/env';
import { createCrlHandler } from '../../crl/handler';
import { createKeygenHandler } from '../../keygen/handler';
import { createReconcileHandler } from '../../reconcile/handler';
import { createSignerHandler } from '../../signer/handler';
import { stdoutOf } from '../../../test-support/stdout';

restoreEnvAfterAll();
process.env.POWERTOOLS_METRICS_DISABLED = 'false';
delete process.env.POWERTOOLS_DEV;

const down = (): Promise<never> => Promise.reject(new Error('dependency down'));
const context = { functionName: 'probe', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;
const observability = (): { logger: Logger; metrics: Metrics } => ({
  logger: new Logger({ serviceName: 'probe', logLevel: 'CRITICAL' }),
  metrics: new Metrics({ namespace: 'ProbeTest' }),
});

/** The figures a failed invocation flushed (one EMF document), and that it did fail. */
async function figuresOfFailed(invoke: () => Promise<unknown>): Promise<Record<string, unknown>> {
  let failed = false;
  const lines = await stdoutOf(() => invoke().catch(() => (failed = true)));
  expect(failed).toBe(true);
  const documents = lines.filter((line) => '_aws' in line && !('ColdStart' in line));
  expect(documents).toHaveLength(1);
  return documents[0];
}

test('signer: the messages taken and all of them handed back', async () => {
  const handler = createSignerHandler({
    signing: down,
    abandon: down,
    limit: pLimit(2),
    ...observability(),
  });
  const event = { Records: [{ body: 'a' }, { body: 'b' }] } as unknown as SQSEvent;
  expect(await figuresOfFailed(() => handler(event, context))).toMatchObject({
    SignMessages: 2,
    SignMessagesReturned: 2,
  });
});

test('keygen: no keys generated', async () => {
  const handler = createKeygenHandler({
    cycle: down,
    settings: { wrapKeyLabel: 'w', hsmProfile: 'softhsm', maxAgeSeconds: 60, fillParallelism: 1 },
    ...observability(),
  });
  expect(await figuresOfFailed(() => handler({}, context))).toMatchObject({ KeysGenerated: 0 });
});

test('reconcile: what it did before the queue failed', async () => {
  const handler = createReconcileHandler({
    reconcile: {
      store: {
        listOpen: async () => ['r1', 'r2'],
        getOpen: async (id) => ({ id, status: 'received', receivedAt: 0, requeues: 0 }),
        markRequeued: async () => true,
        abandon: async () => undefined,
      },
      // The first requeue goes out; the queue is down for the second.
      enqueue: jest.fn().mockResolvedValueOnce(undefined).mockRejectedValue(new Error('queue down')),
      settings: { staleAfterMs: 1000, maxRequeues: 3 },
      limit: 10,
    },
    retire: {
      store: {
        listHeldCredentials: async () => [],
        get: async () => undefined,
        retireCredential: async () => false,
      },
      revoke: async () => undefined,
      limit: 10,
    },
    ...observability(),
  });
  expect(await figuresOfFailed(() => handler({}, context))).toMatchObject({
    RequestsRequeued: 1,
    RequestsLost: 0,
  });
});

test('crl: no restored revocations', async () => {
  const handler = createCrlHandler({ pki: down, audit: down, ...observability() });
  expect(await figuresOfFailed(() => handler({}, context))).toMatchObject({ RevocationsRestored: 0 });
});
