import type { KeyType } from '@pipeline/core/shared';
import { startLocalPipeline, type LocalPipeline } from '../local/runner/pipeline';
import type { Counter } from './e2e-run';

/**
 * A local pipeline for a bench that counts table items behind `counter`: quiet logs, keygen off, and the
 * pool filled now with `keys` EC-P256 keys so that no measured phase waits for one.
 */
export function startCountedPipeline(
  counter: Counter,
  keys: number,
  env: Readonly<Record<string, string>> = {},
): Promise<LocalPipeline> {
  return startQuietPipeline('EC-P256', keys, env, counter);
}

/**
 * A local pipeline for a bench: quiet logs, keygen off, the pool filled now with `keys` keys of
 * `keyType`; behind the counting proxy only when a `counter` is given.
 */
export async function startQuietPipeline(
  keyType: KeyType,
  keys: number,
  env: Readonly<Record<string, string>> = {},
  counter?: Counter,
): Promise<LocalPipeline> {
  const pipeline = await startLocalPipeline({
    ...(counter ? { wrapEndpoint: (service, url) => counter.wrap(service, url) } : {}),
    keygen: false,
    log: () => undefined,
    env: {
      PORT: '0',
      LOG_LEVEL: 'WARN',
      LOCAL_ACCESS_LOG: '0',
      POOL_TARGETS: `${keyType}=${keys}`,
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      ...env,
    },
  });
  console.log(`filling the pool: ${keys} ${keyType} keys ...`);
  try {
    await pipeline.runKeygen();
  } catch (err) {
    await pipeline.stop();
    throw err;
  }
  return pipeline;
}
