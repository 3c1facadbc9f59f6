import { startLocalPipeline, type LocalPipeline } from '../local/runner/pipeline';
import type { Counter } from './e2e-run';

/**
 * A local pipeline for a bench that counts table items behind `counter`: quiet logs, keygen off, and the
 * pool filled now with `keys` EC-P256 keys so that no measured phase waits for one.
 */
export async function startCountedPipeline(
  counter: Counter,
  keys: number,
  env: Readonly<Record<string, string>> = {},
): Promise<LocalPipeline> {
  const pipeline = await startLocalPipeline({
    wrapEndpoint: (service, url) => counter.wrap(service, url),
    keygen: false,
    log: () => undefined,
    env: {
      PORT: '0',
      LOG_LEVEL: 'WARN',
      LOCAL_ACCESS_LOG: '0',
      POOL_TARGETS: `EC-P256=${keys}`,
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      ...env,
    },
  });
  console.log(`filling the pool: ${keys} EC-P256 keys ...`);
  try {
    await pipeline.runKeygen();
  } catch (err) {
    await pipeline.stop();
    throw err;
  }
  return pipeline;
}
