/**
 * The checkpointer: every AUDIT_CHECKPOINT_INTERVAL_SECONDS while chain heads move, a checkpoint of every
 * chain head signed by the audit key, stored in the table and anchored outside it (AUDIT_ANCHOR_TARGET:
 * the Object Lock bucket on AWS). EventBridge starts it once a minute, its shortest rate; each run loops
 * until just before the next one starts. A run with failed rounds ends in an error (the alarm), after
 * trying every round: one bad round must not leave the rest of the minute uncovered.
 */
import type { Context } from 'aws-lambda';
import { loadAuditConfig } from '@pipeline/config';
import { errorCode } from '@pipeline/core';
import { SCHEDULES } from '@pipeline/resources';
import { checkpointingAuditLog } from '../shared/audit';
import { createLogger } from '../shared/wiring';

const logger = createLogger('audit-checkpoint');
/** Stop this long before the next scheduled run would start. */
const MARGIN_MS = 3_000;

export class AuditCheckpointRunError extends Error {
  public override readonly name = 'AuditCheckpointRunError';
  public readonly code = 'AUDIT_CHECKPOINT_FAILED';
}

export interface CheckpointRound {
  /** Sequence of the checkpoint written; 0 when no head had moved. */
  readonly checkpoint: number;
}

/** One round: anchors what is stored but not anchored, then checkpoints if any head moved. */
export async function checkpointOnce(): Promise<CheckpointRound> {
  const log = await checkpointingAuditLog();
  const written = await log.checkpointIfMoved();
  return { checkpoint: written?.body.sequence ?? 0 };
}

export async function handler(
  _event: unknown,
  context: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<{ rounds: number; checkpoints: number; failures: number }> {
  const intervalMs = loadAuditConfig().checkpointIntervalSeconds * 1000;
  const budget = Math.min(
    SCHEDULES.auditCheckpoint.rateMinutes * 60_000 - MARGIN_MS,
    context.getRemainingTimeInMillis() - MARGIN_MS,
  );
  const started = Date.now();
  let rounds = 0;
  let checkpoints = 0;
  let failures = 0;
  for (;;) {
    const roundStart = Date.now();
    rounds++;
    try {
      if ((await checkpointOnce()).checkpoint > 0) checkpoints++;
    } catch (err) {
      failures++;
      logger.error('audit checkpoint failed', { errorCode: errorCode(err), errorName: (err as Error)?.name });
    }
    const next = roundStart + intervalMs;
    if (next - started + intervalMs > budget) break;
    await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
  }
  logger.info('audit checkpoint run', { rounds, checkpoints, failures });
  if (failures > 0) throw new AuditCheckpointRunError(`${failures} of ${rounds} checkpoint rounds failed`);
  return { rounds, checkpoints, failures };
}
