/**
 * The one way a function makes its logger and metrics: JSON log lines with the function's service name
 * at LOG_LEVEL (INFO by default), and CloudWatch EMF figures in the pipeline's namespace. Kept apart from
 * wiring.ts so that functions without queue or pool work (CA, TSA, OCSP, revocation) load neither.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

export function createLogger(serviceName: string): Logger {
  return new Logger({ serviceName, logLevel: (process.env.LOG_LEVEL as 'INFO' | undefined) ?? 'INFO' });
}

/** The service dimension comes from POWERTOOLS_SERVICE_NAME (set by the CDK app). */
export function createMetrics(): Metrics {
  return new Metrics({ namespace: 'SigningPipeline' });
}
