/**
 * The checkpointer: every AUDIT_CHECKPOINT_INTERVAL_SECONDS while chain heads move, a checkpoint of every
 * chain head signed by the audit key, stored in the table and anchored outside it (AUDIT_ANCHOR_TARGET:
 * the Object Lock bucket on AWS). EventBridge starts it once a minute, its shortest rate; each run loops
 * until just before the next one starts. A run with failed rounds ends in an error (the alarm), after
 * trying every round: one bad round must not leave the rest of the minute uncovered. Heads that moved
 * backwards from the last checkpoint (a rewritten chain) are never signed over: each such round counts in
 * the metric `AuditHeadsRewound`, which has an alarm of its own.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import type { AuditLog } from '@pipeline/audit';
import type { AuditCheckpointFunctionConfig } from '@pipeline/config';
import { AuditHeadsRewoundError } from '@pipeline/core/audit';
import { PipelineError, errorCode } from '@pipeline/core/shared';
import { SCHEDULES } from '@pipeline/resources';
import { checkpointingAuditLog } from '../shared/audit';
import { createLogger, createMetrics } from '../shared/observability';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';

/** Stop this long before the next scheduled run would start. */
const MARGIN_MS = 3_000;

export class AuditCheckpointRunError extends PipelineError {
  public override readonly name = 'AuditCheckpointRunError';

  public constructor(message: string) {
    super(message, 'AUDIT_CHECKPOINT_FAILED');
  }
}

export interface AuditCheckpointDeps {
  /** The audit log with the audit key (set up on first use, retried after a failure). */
  readonly log: () => Promise<AuditLog>;
  readonly intervalMs: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export interface CheckpointRound {
  /** Sequence of the checkpoint written; 0 when no head had moved. */
  readonly checkpoint: number;
}

export interface CheckpointRun {
  readonly rounds: number;
  readonly checkpoints: number;
  readonly failures: number;
}

/** One round: anchors what is stored but not anchored, then checkpoints if any head moved. */
export async function checkpointRound(deps: Pick<AuditCheckpointDeps, 'log'>): Promise<CheckpointRound> {
  const written = await (await deps.log()).checkpointIfMoved();
  return { checkpoint: written?.body.sequence ?? 0 };
}

export function createAuditCheckpointHandler(
  deps: AuditCheckpointDeps,
): LambdaHandler<unknown, CheckpointRun> {
  const { logger, metrics, intervalMs } = deps;
  return lambdaHandler(
    async (_event: unknown, context: Context) => {
      const budget = Math.min(
        SCHEDULES.auditCheckpoint.rateMinutes * 60_000 - MARGIN_MS,
        context.getRemainingTimeInMillis() - MARGIN_MS,
      );
      const started = Date.now();
      let rounds = 0;
      let checkpoints = 0;
      let failures = 0;
      let rewound = 0;
      for (;;) {
        const roundStart = Date.now();
        rounds++;
        try {
          if ((await checkpointRound(deps)).checkpoint > 0) checkpoints++;
        } catch (err) {
          failures++;
          if (err instanceof AuditHeadsRewoundError) rewound++;
          logger.error('audit checkpoint failed', {
            errorCode: errorCode(err),
            errorName: (err as Error)?.name,
            ...(err instanceof AuditHeadsRewoundError ? { chains: err.chains } : {}),
          });
        }
        const next = roundStart + intervalMs;
        if (next - started + intervalMs > budget) break;
        await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
      }
      metrics.addMetric('AuditCheckpoints', MetricUnit.Count, checkpoints);
      metrics.addMetric('AuditHeadsRewound', MetricUnit.Count, rewound);
      logger.info('audit checkpoint run', { rounds, checkpoints, failures, rewound });
      if (failures > 0) {
        throw new AuditCheckpointRunError(`${failures} of ${rounds} checkpoint rounds failed`);
      }
      return { rounds, checkpoints, failures };
    },
    { logger, metrics },
  );
}

/** The checkpointer's dependencies from configuration: the audit key's log and the round interval. */
export function wireAuditCheckpoint(config: AuditCheckpointFunctionConfig): AuditCheckpointDeps {
  return {
    log: checkpointingAuditLog(config),
    intervalMs: config.audit.checkpointIntervalSeconds * 1000,
    logger: createLogger('audit-checkpoint'),
    metrics: createMetrics(),
  };
}
