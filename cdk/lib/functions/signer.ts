import { Duration } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { ENV } from '@pipeline/config';
import { SIGNER_EVENT_SOURCE, SIGNER_TIMEOUT_SECONDS } from '@pipeline/resources';
import { poolUserEnv, signQueueEnv, tableEnv, type FunctionDeps, type FunctionSpec } from './spec';

/** Signs queued requests as the pool's crypto user, with the pool settings and the wrapping key. */
export const signer: FunctionSpec = {
  name: 'signer',
  description: 'Signs queued requests with pooled one-time keys (SQS batches, partial failures)',
  memorySize: 1024,
  timeoutSeconds: SIGNER_TIMEOUT_SECONDS,
  network: { kind: 'hsm', cryptoUser: 'pool' },
  environment: (deps) => ({
    ...poolUserEnv(deps),
    [ENV.CA_FUNCTION_NAME]: deps.fn('ca').functionArn,
    [ENV.TSA_FUNCTION_NAME]: deps.fn('tsa').functionArn,
    [ENV.OCSP_FUNCTION_NAME]: deps.fn('ocsp').functionArn,
    // A delivery that meets a live lease holds its message until the lease ends (ChangeMessageVisibility,
    // granted with the event source's consume permissions).
    ...signQueueEnv(deps),
    [ENV.SIGNER_CONCURRENCY]: String(SIGNER_EVENT_SOURCE.batchSize),
    ...tableEnv(deps, 'requests', 'keyPool', 'audit'),
  }),
  grants: (grant) => {
    // Run requests through their states; claim pooled keys (query + conditional delete + counter). Its
    // queue permissions come from the event source mapping (receive, delete, decrypt).
    grant.table('requests', 'GetItem', 'UpdateItem');
    grant.table('keyPool', 'Query', 'DeleteItem', 'UpdateItem');
    grant.appendsAudit();
    grant.tableKey();
    grant.login();
    // Certificates; and for B-T and B-LT, time-stamps and the new certificate's OCSP response. The
    // unqualified ARNs only: it calls them by those. It may issue (never revoke).
    grant.invoke('ca', 'tsa', 'ocsp');
  },
  connectPublicPki: (grant, pki) => {
    grant.fn.addEnvironment(ENV.PKI_PUBLISH_TARGET, `s3:${pki.bucket.bucketName}`);
    // The root's CRL for B-LT validation data (the issuing CA's and the TSA's status).
    grant.readsObjects(pki.bucket, ['root.crl']);
  },
};

/** Provisioned concurrency keeps HSM logins warm; the queue feeds the alias, never $LATEST. */
export function createSignerAlias(scope: Construct, fn: NodejsFunction, deps: FunctionDeps): lambda.Alias {
  const { signer: settings } = deps.settings;
  const alias = new lambda.Alias(scope, 'SignerLive', {
    aliasName: 'live',
    version: fn.currentVersion,
    provisionedConcurrentExecutions: settings.provisionedConcurrency || undefined,
  });
  if (settings.scaling.length > 0) {
    const base = settings.provisionedConcurrency;
    const peak = Math.max(base, ...settings.scaling.map((w) => w.max));
    const scaling = alias.addAutoScaling({ minCapacity: base, maxCapacity: peak });
    for (const window of settings.scaling) {
      scaling.scaleOnSchedule(window.name, {
        schedule: appscaling.Schedule.expression(`cron(${window.cron})`),
        minCapacity: window.min,
        maxCapacity: window.max,
      });
    }
  }
  alias.addEventSource(
    new SqsEventSource(deps.signQueue.queue, {
      batchSize: SIGNER_EVENT_SOURCE.batchSize,
      maxBatchingWindow:
        SIGNER_EVENT_SOURCE.maxBatchingWindowSeconds > 0
          ? Duration.seconds(SIGNER_EVENT_SOURCE.maxBatchingWindowSeconds)
          : undefined,
      maxConcurrency: SIGNER_EVENT_SOURCE.maxConcurrency,
      reportBatchItemFailures: SIGNER_EVENT_SOURCE.reportBatchItemFailures,
    }),
  );
  return alias;
}
