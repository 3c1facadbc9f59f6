/**
 * The one way a function starts an invocation: middy with the Powertools middleware. Every log line of
 * the invocation carries the Lambda context (function, request id, cold start); a function with metrics
 * counts its cold starts and publishes what it stored when the invocation ends, failed or not.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { asFunction } from '@pipeline/adapters/aws';

/** A function's handler: what Lambda calls, and what the local runner and the tests call. */
export type LambdaHandler<E, R> = (event: E, context?: Context) => Promise<R>;

export interface Observability {
  readonly logger: Logger;
  /**
   * Only for functions that store a figure in every invocation, failed ones included (Powertools warns
   * on an empty flush).
   */
  readonly metrics?: Metrics;
}

export function lambdaHandler<E, R>(
  handle: (event: E, context: Context) => Promise<R>,
  { logger, metrics }: Observability,
): LambdaHandler<E, R> {
  // No early timeout of middy's own: the functions watch their deadline themselves (the signer's last
  // delivery, keygen, the checkpointer) and Lambda ends what overruns it.
  const handler = middy(handle, { timeoutEarlyInMillis: 0 }).use(injectLambdaContext(logger));
  if (metrics) handler.use(logMetrics(metrics, { captureColdStartMetric: true }));
  // Tests and tools may call without a context: the handler then sees an empty one, as middy gives it.
  // Its AWS calls are attributed to the function when they are recorded (AWS_CALL_RECORD_FILE).
  return (event, context) =>
    asFunction(context?.functionName, () => handler(event, context ?? ({} as Context)));
}
