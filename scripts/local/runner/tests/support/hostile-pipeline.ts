/**
 * The local pipeline a hostile end-to-end suite attacks: started quiet (warnings only, no request log to
 * the console) on a free port with its own table prefix, its key pool generated once (no background
 * keygen), plus the relying party's PKI base URL and a DynamoDB client for tampering with the tables.
 * Each suite starts one in `beforeAll` and stops it in `afterAll`.
 */
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { startLocalPipeline, type LocalPipeline } from '../../pipeline';

export interface HostilePipeline {
  readonly pipeline: LocalPipeline;
  /** The public PKI endpoint (OCSP, CRL, certificates). */
  readonly pki: string;
  readonly doc: ReturnType<typeof documentClient>;
  stop(): Promise<void>;
}

/** `name` prefixes the suite's tables; `env` adds to (or overrides) the quiet defaults, e.g. POOL_TARGETS. */
export async function startHostilePipeline(
  name: string,
  env: Readonly<Record<string, string>>,
): Promise<HostilePipeline> {
  const pipeline = await startLocalPipeline({
    resourcePrefix: `${name}-${Date.now().toString(36)}-`,
    log: () => undefined,
    env: { PORT: '0', LOCAL_KEYGEN_INTERVAL_SECONDS: '3600', LOG_LEVEL: 'WARN', ...env },
  });
  await pipeline.runKeygen();
  const doc = documentClient(loadAwsConfig());
  return {
    pipeline,
    pki: pipeline.url.replace(/\/v1$/, '/pki'),
    doc,
    async stop() {
      doc.destroy();
      await pipeline.stop();
    },
  };
}
