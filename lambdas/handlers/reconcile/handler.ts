/**
 * Scheduled (EventBridge, every 5 minutes) -> this function (reserved concurrency 1): finds sign requests
 * still open long after anything happened to them (their message lost, or dead-lettered under a lease)
 * and sends each a fresh message, or fails it (DELIVERY_LOST) once requeues did not finish it. The rules
 * are in core/reconcile.ts; the sparse open-requests index keeps each run to the open requests alone.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { reconcileOpenRequests, type ReconcileDeps, type ReconcileSummary } from '@pipeline/core';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger, createMetrics } from '../shared/observability';
import { wire } from '../shared/wiring';

export interface ReconcileHandlerDeps {
  readonly reconcile: Omit<ReconcileDeps, 'onAction'>;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export function createReconcileHandler({
  reconcile,
  logger,
  metrics,
}: ReconcileHandlerDeps): LambdaHandler<unknown, ReconcileSummary> {
  return lambdaHandler(
    async () => {
      const summary = await reconcileOpenRequests({
        ...reconcile,
        // Ids only: the request's content (personal data) is never logged.
        onAction: (requestId, decision) =>
          logger.warn(decision.kind === 'requeue' ? 'open request requeued' : 'open request failed', {
            requestId,
            requeues: decision.kind === 'requeue' ? decision.requeues + 1 : undefined,
            errorCode: decision.kind === 'abandon' ? decision.error.code : undefined,
          }),
      });
      if (summary.requeued + summary.abandoned > 0) logger.warn('reconciled open requests', { ...summary });
      // Every run reports both, zero included: the RequestsLost alarm pages on any lost request.
      metrics.addMetric('RequestsRequeued', MetricUnit.Count, summary.requeued);
      metrics.addMetric('RequestsLost', MetricUnit.Count, summary.abandoned);
      return summary;
    },
    { logger, metrics },
  );
}

/** The reconciler's dependencies from configuration: the requests table, the queue and its limits. */
export function wireReconcile(): ReconcileHandlerDeps {
  const { requests, queue, requestsConfig } = wire();
  return {
    reconcile: {
      store: requests,
      enqueue: (id) => queue.enqueue(id),
      settings: {
        staleAfterMs: requestsConfig.reconcileStaleAfterSeconds * 1000,
        maxRequeues: requestsConfig.reconcileMaxRequeues,
      },
      limit: requestsConfig.reconcileBatchLimit,
    },
    logger: createLogger('reconcile'),
    metrics: createMetrics(),
  };
}
