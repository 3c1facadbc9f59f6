/**
 * Scheduled (EventBridge, every 5 minutes) -> this function (reserved concurrency 1): finds sign requests
 * still open long after anything happened to them (their message lost, or dead-lettered under a lease)
 * and sends each a fresh message, or fails it (DELIVERY_LOST) once requeues did not finish it. The rules
 * are in core/reconcile.ts; the sparse open-requests index keeps each run to the open requests alone.
 * Then it retires one-time credentials never used (core/credential-retirement.ts): their certificate
 * revoked through the revocation function, their wrapped key removed.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { LambdaCertificateRevoker } from '@pipeline/adapters/lambda';
import { lambdaClient } from '@pipeline/adapters/aws';
import {
  reconcileOpenRequests,
  retireUnusedCredentials,
  type ReconcileDeps,
  type ReconcileSummary,
  type RetirementDeps,
} from '@pipeline/core/signing';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger, createMetrics } from '../shared/observability';
import { wire } from '../shared/wiring';
import type { QueueFunctionConfig } from '@pipeline/config';

export interface ReconcileHandlerDeps {
  readonly reconcile: Omit<ReconcileDeps, 'onAction'>;
  readonly retire: RetirementDeps;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export function createReconcileHandler({
  reconcile,
  retire,
  logger,
  metrics,
}: ReconcileHandlerDeps): LambdaHandler<unknown, ReconcileSummary> {
  return lambdaHandler(
    async () => {
      // Counted as they happen, so a run that fails halfway still reports what it did; every run reports
      // both, zero included: the RequestsLost alarm pages on any lost request.
      let requeued = 0;
      let lost = 0;
      try {
        const summary = await reconcileOpenRequests({
          ...reconcile,
          onAction: (requestId, decision) => {
            if (decision.kind === 'requeue') requeued++;
            else lost++;
            // Ids only: the request's content (personal data) is never logged.
            logger.warn(decision.kind === 'requeue' ? 'open request requeued' : 'open request failed', {
              requestId,
              requeues: decision.kind === 'requeue' ? decision.requeues + 1 : undefined,
              errorCode: decision.kind === 'abandon' ? decision.error.code : undefined,
            });
          },
        });
        if (summary.requeued + summary.abandoned > 0) {
          logger.warn('reconciled open requests', { ...summary });
        }
        const credentials = await retireUnusedCredentials(retire);
        metrics.addMetric('CredentialsRetired', MetricUnit.Count, credentials.retired);
        if (credentials.retired > 0) logger.info('retired unused one-time credentials', { ...credentials });
        return summary;
      } finally {
        metrics.addMetric('RequestsRequeued', MetricUnit.Count, requeued);
        metrics.addMetric('RequestsLost', MetricUnit.Count, lost);
      }
    },
    { logger, metrics },
  );
}

/** The reconciler's dependencies from configuration: the requests table, the queue and its limits. */
export function wireReconcile(config: QueueFunctionConfig): ReconcileHandlerDeps {
  const { requests, queue, requestsConfig } = wire(config);
  const revoker = new LambdaCertificateRevoker(
    lambdaClient(config.app.aws),
    config.pipeline.revokeFunctionName,
  );
  return {
    retire: {
      store: requests,
      revoke: async (requestId) => {
        await revoker.retireCredential(requestId, 'reconcile');
      },
      limit: requestsConfig.reconcileBatchLimit,
    },
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
