/**
 * The local pipeline a hostile end-to-end suite attacks: started quiet (warnings only, no request log to
 * the console) on a free port with its own table prefix, its key pool generated once (no background
 * keygen), plus the relying party's PKI base URL and a DynamoDB client for tampering with the tables.
 * Each suite starts one in `beforeAll` and stops it in `afterAll`. Beside it, what the suites that attack
 * the audit log do with it: the operator's audit command and the anchors outside the table.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileAnchorStore } from '@pipeline/adapters/anchors';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { parseCheckpointBody, type AuditReceipt } from '@pipeline/core/audit';
import { ROOT } from '../../../paths';
import { startLocalPipeline, type LocalPipeline } from '../../pipeline';
import { until } from './relying-party';

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
  const doc = documentClient(loadAwsConfig(process.env));
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

type WithEnv = Pick<LocalPipeline, 'env'>;

/** Runs the operator's audit command (scripts/audit.ts) against the pipeline's tables and anchors. */
export function auditCli(
  pipeline: WithEnv,
  ...args: string[]
): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(join(ROOT, 'node_modules', '.bin', 'tsx'), [join(ROOT, 'scripts', 'audit.ts'), ...args], {
    env: { ...process.env, ...pipeline.env },
    encoding: 'utf8',
  });
}

/** The store the checkpoint function anchors to outside the table (a folder locally). */
export function anchorStore(pipeline: WithEnv): ReturnType<typeof fileAnchorStore> {
  const target = pipeline.env.AUDIT_ANCHOR_TARGET;
  expect(target).toMatch(/^file:/);
  return fileAnchorStore(target.slice('file:'.length));
}

/** Waits until an anchored checkpoint (outside the table) covers the receipt's entry; its sequence. */
export async function anchoredOver(pipeline: WithEnv, receipt: AuditReceipt): Promise<number> {
  const anchors = anchorStore(pipeline);
  return until(
    `an anchored checkpoint over ${receipt.chain}/${receipt.sequence}`,
    async () => {
      for (const anchor of (await anchors.readAll()).reverse()) {
        const body = anchor.body && parseCheckpointBody(anchor.body);
        const head = body && body.heads.find((h) => h.chain === receipt.chain);
        if (body && head && head.sequence >= receipt.sequence) return body.sequence;
      }
      return undefined;
    },
    15_000,
  );
}
