/**
 * SQS -> this function (provisioned concurrency): each message is a sign request id. Records of a batch
 * run concurrently; failures are reported per record (Powertools batch), so one bad message never fails
 * its neighbours, and SQS redelivers only those. The signing core is idempotent on redelivery.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import pLimit, { type LimitFunction } from 'p-limit';
import { lambdaClient } from '@pipeline/adapters/aws';
import { MAX_TRANSACTION_ITEMS, RequestRepository } from '@pipeline/adapters/dynamodb';
import {
  BatchingCertificateIssuer,
  ValidationDataCollector,
  type FunctionTimeStamper,
  type HttpTimeStamper,
} from '@pipeline/adapters/lambda';
import { PowertoolsPoolMetrics } from '@pipeline/adapters/metrics';
import { pkiPublisher } from '@pipeline/adapters/publish';
import type { SignerFunctionConfig } from '@pipeline/config';
import { FallbackLimiter, PrefetchingKeyClaimer } from '@pipeline/core/pool';
import { PipelineError, errorCode } from '@pipeline/core/shared';
import {
  REQUEST_ID_PATTERN,
  deliverSignRequest,
  processSignRequest,
  type DeliveryDeps,
  type SigningDeps,
} from '@pipeline/core/signing';
import { buildCsr, pemToDer, prepareCmsContainer, verifyOwnCsr } from '@pipeline/der';
import { prepareSignTask } from '@pipeline/dss';
import { QUEUES } from '@pipeline/resources';
import { headSigningAuditLog } from '../shared/audit';
import { sharedHsm } from '../shared/hsm';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger, createMetrics } from '../shared/observability';
import { createTimeStamper, tsaTrustAnchors } from '../shared/time-stamping';
import { wire } from '../shared/wiring';

/** Malformed message bodies: no request stands behind them, so they go (via retries) to the DLQ. */
export class PoisonMessageError extends PipelineError {
  public override readonly name = 'PoisonMessageError';

  public constructor(message: string) {
    super(message, 'POISON_MESSAGE');
  }
}

export interface SignerHandlerDeps {
  /** The signing core's ports; the HSM login and the audit log resolve on first use. */
  readonly signing: () => Promise<SigningDeps>;
  /** Ends a request no attempt owns (its last delivery ran out of time). */
  readonly abandon: DeliveryDeps['abandon'];
  /**
   * Keeps a message invisible for a while (ms) instead of the queue's visibility timeout: a delivery that
   * meets a live lease comes back when the lease has ended, not before.
   */
  readonly hold?: (receiptHandle: string, ms: number) => Promise<void>;
  /** At most this many records of this environment in flight at once (batches may be larger). */
  readonly limit: LimitFunction;
  /** Told of each request this environment ended (signed or failed, its record written), by id. */
  readonly onRequestEnded?: (requestId: string) => void;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export function createSignerHandler(deps: SignerHandlerDeps): LambdaHandler<SQSEvent, SQSBatchResponse> {
  const { logger, metrics, limit } = deps;

  async function processRecord(record: SQSRecord, signing: SigningDeps, context: Context): Promise<void> {
    const id = record.body.trim();
    if (!REQUEST_ID_PATTERN.test(id)) {
      const error = new PoisonMessageError(`message ${record.messageId} does not carry a request id`);
      logger.warn('poison message', { errorName: error.name, messageId: record.messageId });
      throw error;
    }
    const receiveCount = Number(record.attributes.ApproximateReceiveCount);
    const outcome = await deliverSignRequest(
      {
        requestId: id,
        receiveCount,
        maxReceiveCount: QUEUES.signRequests.maxReceiveCount,
        remainingTimeMs: () => context.getRemainingTimeInMillis(),
        hold: deps.hold ? (ms) => deps.hold!(record.receiptHandle, ms) : undefined,
      },
      {
        process: (requestId, options) => processSignRequest(signing, requestId, options),
        abandon: deps.abandon,
        onUnfinished: (err) =>
          logger.warn('sign request not finished in this delivery', {
            requestId: id,
            errorName: (err as Error)?.name,
            errorCode: (err as { code?: unknown })?.code,
            receiveCount,
          }),
      },
    );
    logger.info('sign request done', {
      requestId: id,
      status: outcome.status,
      replayed: outcome.replayed,
      pooledKey: outcome.record.pooledKey,
      errorCode: outcome.record.error?.code,
    });
    deps.onRequestEnded?.(id);
  }

  return lambdaHandler(
    async (event: SQSEvent, context: Context) => {
      // Every invocation: messages taken, and those handed back to the queue for another delivery (all of
      // them when the invocation fails).
      metrics.addMetric('SignMessages', MetricUnit.Count, event.Records.length);
      let returned = event.Records.length;
      try {
        const signing = await deps.signing();
        const run = (record: SQSRecord): Promise<void> =>
          limit(() => processRecord(record, signing, context));
        // A processor per invocation: outside Lambda's own store its state is per instance, and
        // invocations that overlap in one process (the local poller runs several) would report each
        // other's failures, deleting messages whose requests are not finished.
        const processor = new BatchProcessor(EventType.SQS);
        const response = await processPartialResponse(event, run, processor, {
          context,
          processInParallel: true,
          throwOnFullBatchFailure: false,
        });
        returned = response.batchItemFailures.length;
        return response;
      } finally {
        metrics.addMetric('SignMessagesReturned', MetricUnit.Count, returned);
      }
    },
    { logger, metrics },
  );
}

type Wired = ReturnType<typeof wire>;

/**
 * B-T and up: the service's TSA function (or an external TSA); B-LT: the OCSP function and the root's
 * published CRL, read at most once a minute.
 */
function longTermSources(
  pipeline: Wired['pipeline'],
  config: Wired['config'],
  ca: SignerFunctionConfig['ca'],
  lambda: ReturnType<typeof lambdaClient>,
): { timeStamper: FunctionTimeStamper | HttpTimeStamper; validationData: ValidationDataCollector } {
  const tsaAnchorsPem = tsaTrustAnchors(pipeline.timeStamping);
  const timeStamper = createTimeStamper(pipeline.timeStamping, lambda, tsaAnchorsPem);
  const publisher = pkiPublisher(ca.publishTarget, config.aws);
  let rootCrl: { readonly at: number; readonly der: Promise<Buffer | undefined> } | undefined;
  const validationData = new ValidationDataCollector({
    client: lambda,
    ocspFunctionName: pipeline.ocspFunctionName,
    // An external TSA's certificates are not in the root's CRL: their status is fetched where they say.
    ...(pipeline.timeStamping.kind === 'url'
      ? { externalTsa: { trustAnchorsDer: tsaAnchorsPem.map((pem) => pemToDer(pem)) } }
      : {}),
    rootCrl: () => {
      if (!rootCrl || Date.now() - rootCrl.at > 60_000) {
        rootCrl = { at: Date.now(), der: publisher.read('root.crl').catch(() => undefined) };
      }
      return rootCrl.der;
    },
  });
  return { timeStamper, validationData };
}

/** The signer's dependencies from configuration, made once per execution environment. */
export function wireSigner(functionConfig: SignerFunctionConfig): SignerHandlerDeps {
  const logger = createLogger('signer');
  const metrics = createMetrics();
  const { config, pipeline, pool, keyPool, requestsConfig, doc, queue } = wire(functionConfig);
  const limit = pLimit(pipeline.signerConcurrency);
  // The records of a batch move together: one transaction and one read per step, not one write each.
  const requests = new RequestRepository(doc, {
    tableName: config.tables.requests,
    batching: {
      windowMs: pipeline.recordBatchWindowMs,
      maxBatch: MAX_TRANSACTION_ITEMS,
      waiting: () => limit.activeCount,
    },
  });
  // The next key of a type is claimed while the current request works: its table round trip leaves the
  // request path. A claimed key is deleted from the table, so it is still used at most once.
  const claimer = new PrefetchingKeyClaimer(keyPool);
  // One Lambda client per environment, for the CA, the TSA and the OCSP function: its connections are
  // reused by every batch. Certificate requests of the records in flight go to the CA together (one
  // invocation per batch, not per record).
  const lambda = lambdaClient(config.aws);
  const issuer = new BatchingCertificateIssuer(lambda, pipeline.caFunctionName, {
    windowMs: pipeline.caBatchWindowMs,
    maxBatch: pipeline.caBatchMax,
    inFlight: () => limit.activeCount,
  });
  const { timeStamper, validationData } = longTermSources(pipeline, config, functionConfig.ca, lambda);
  // An empty pool type falls back to generation in the HSM, a few at a time per environment: the others
  // wait briefly or fail POOL_EMPTY, so one drained type cannot take every HSM session from the rest.
  const fallbackLimiter = new FallbackLimiter({
    maxInFlight: pool.fallbackMaxInFlight,
    waitMs: pool.fallbackWaitMs,
  });
  // Started now, so a provisioned environment is logged in before its first request. Each entry's head
  // is signed by the audit key (on the pool user's token) before receipts are returned.
  // A failure here is not final: each invocation asks again, and a failed set-up is retried.
  const auditLog = headSigningAuditLog(doc, functionConfig, logger);
  sharedHsm(config).catch(() => undefined);
  auditLog().catch(() => undefined);
  const poolMetrics = new PowertoolsPoolMetrics(metrics);
  return {
    signing: async () => ({
      requests,
      pool: claimer,
      hsm: await sharedHsm(config),
      buildCsr,
      buildContainer: prepareCmsContainer,
      prepareTask: prepareSignTask,
      timeStamper,
      validationData,
      onLevelLowered: (reached, code) =>
        logger.warn('signature level lowered to the request minimum', { reached, errorCode: code }),
      verifyCsr: verifyOwnCsr,
      audit: await auditLog(),
      // Unusable pool keys (already out of the pool) are reported; the request carries on with another.
      onKeyDiscarded: (keyId, keyType, reason) =>
        logger.warn('pool key discarded', { keyId, keyType, reason }),
      onRetry: (stage, err, attempt) =>
        logger.warn('transient failure, retrying', { stage, attempt, errorCode: errorCode(err) }),
      issuer,
      metrics: poolMetrics,
      fallbackLimiter,
      settings: {
        emptyPoolPolicy: pool.emptyPolicy,
        retryAfterSeconds: pool.retryAfterSeconds,
        leaseMs: requestsConfig.attemptLeaseSeconds * 1000,
        hsmProfile: config.hsm.profile,
      },
    }),
    abandon: (requestId, error, now) => requests.abandon(requestId, error, now),
    // Only with the queue's URL (SIGN_QUEUE_URL); without it a busy message waits out its visibility timeout.
    hold: pipeline.queueUrl ? (receiptHandle, ms) => queue.hold(receiptHandle, ms) : undefined,
    limit,
    logger,
    metrics,
  };
}
