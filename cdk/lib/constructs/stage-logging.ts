import { RemovalPolicy } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/**
 * What every REST API stage of the stack logs and traces: JSON access logs to a retained log group kept a
 * year (`id` in `scope`), ERROR-level execution logs without data tracing (bodies carry digests and
 * identities), X-Ray from the gateway (a trace starts where the client's request does) and metrics.
 */
export function loggedStageOptions(scope: Construct, id: string): apigw.StageOptions {
  const accessLogs = new logs.LogGroup(scope, id, {
    retention: logs.RetentionDays.ONE_YEAR,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  return {
    accessLogDestination: new apigw.LogGroupLogDestination(accessLogs),
    accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
    loggingLevel: apigw.MethodLoggingLevel.ERROR,
    dataTraceEnabled: false,
    tracingEnabled: true,
    metricsEnabled: true,
  };
}
