/**
 * Scheduled (EventBridge, every 5 minutes) -> this function (reserved concurrency 1): finds sign requests
 * still open long after anything happened to them (their message lost, or dead-lettered under a lease)
 * and sends each a fresh message, or fails it (DELIVERY_LOST) once requeues did not finish it. The rules
 * are in core/reconcile.ts; the sparse open-requests index keeps each run to the open requests alone.
 */
import type { Context } from 'aws-lambda';
import { MetricUnit, Metrics } from '@aws-lambda-powertools/metrics';
import { reconcileOpenRequests, type ReconcileSummary } from '@pipeline/core';
import { createLogger, wire } from '../shared/wiring';

const logger = createLogger('reconcile');
const metrics = new Metrics({ namespace: 'SigningPipeline' });
const { requests, queue, requestsConfig } = wire();

export async function runReconcile(): Promise<ReconcileSummary> {
  const summary = await reconcileOpenRequests({
    store: requests,
    enqueue: (id) => queue.enqueue(id),
    settings: {
      staleAfterMs: requestsConfig.reconcileStaleAfterSeconds * 1000,
      maxRequeues: requestsConfig.reconcileMaxRequeues,
    },
    limit: requestsConfig.reconcileBatchLimit,
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
  metrics.publishStoredMetrics();
  return summary;
}

export async function handler(_event?: unknown, context?: Context): Promise<ReconcileSummary> {
  // Every log line of the invocation carries the Lambda context (function, request id, cold start).
  if (context) logger.addContext(context);
  metrics.captureColdStartMetric(context?.functionName);
  return runReconcile();
}
