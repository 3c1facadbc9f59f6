/**
 * One consumer process of the local runner: the SQS event source mapping in front of the unchanged
 * signer handler. Separate from the runner so it can be killed (and restarted) on its own, as an
 * execution environment can be. It exits when its parent goes away (stdin closes) or on SIGTERM.
 */
import { sqsClient } from '@pipeline/adapters/aws';
import { loadSignerFunctionConfig, type AppConfig } from '@pipeline/config';
import { SIGNER_TIMEOUT_SECONDS } from '@pipeline/resources';
import { createMetrics, createSignerHandler, sharedHsm, wireSigner } from '../../../lambdas/handlers';
import { printGcMarkers } from './gc-markers';
import { installHsmFaults } from '../faults/install';
import { startSqsPoller } from './sqs-poller';

async function main(): Promise<void> {
  printGcMarkers();
  // A process of its own: its configuration is the environment the runner started it with.
  const functionConfig = loadSignerFunctionConfig(process.env);
  const { app: config, pipeline } = functionConfig;
  installHsmFaults();
  // Each poller plays an execution environment: its own handler, so its invocations' figures are flushed
  // by it alone (Lambda runs one invocation at a time per environment). The clients, batching and the
  // in-flight limit stay shared: the process's limit is the environments' together.
  const signer = wireSigner(functionConfig);
  // Each request ended is told to the runner, whose API wakes the client waiting for it (one read then,
  // not a poll). Best effort: a lost word leaves the client to its wait's fallback read.
  const onRequestEnded = process.send
    ? (requestId: string): void => void process.send?.({ ended: requestId }, undefined, {}, () => undefined)
    : undefined;
  process.channel?.unref();
  const handlers = Array.from({ length: pipeline.local.pollerConcurrency }, () =>
    createSignerHandler({ ...signer, onRequestEnded, metrics: createMetrics() }),
  );
  // Logged in before the first poll, as a provisioned environment is after its init. The fault tests
  // kill only ready consumers: SoftHSM rewrites its token file on every login, and a SIGKILL in the
  // middle of that would truncate it.
  await sharedHsm(config);
  console.error('consumer ready');
  const poller = startSqsPoller({
    client: sqsClient(config.aws),
    queueUrl: pipeline.queueUrl,
    queueArn: process.env.SIGN_QUEUE_ARN ?? 'arn:aws:sqs:local:000000000000:sign-requests',
    handlers,
    batchSize: pipeline.signerBatchSize,
    batchingWindowMs: pipeline.signerBatchingWindowMs,
    region: config.aws.region,
    functionTimeoutMs: SIGNER_TIMEOUT_SECONDS * 1000,
    log: (line) => console.error(line),
  });
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    void poller
      .stop()
      .then(() => reportSessionObjects(config))
      .finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 10_000).unref();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  process.stdin.on('end', shutdown);
  process.stdin.on('close', shutdown);
  process.stdin.resume();
}

/**
 * After the last batch, every unwrapped key must have been destroyed: the session objects this process
 * still holds are logged (fault tests assert 0; a killed process's session objects die with it).
 */
async function reportSessionObjects(config: AppConfig): Promise<void> {
  const count = await (await sharedHsm(config)).countSessionObjects();
  console.error(`consumer stopped: hsm session objects ${count}`);
}

main().catch((err: Error) => {
  console.error(`consumer failed to start: ${err.name}: ${err.message}`);
  process.exit(1);
});
