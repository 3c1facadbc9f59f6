/**
 * How every function starts an invocation (middy with the Powertools middleware): its log lines carry
 * the Lambda context; a function with metrics counts an on-demand cold start once (a provisioned
 * environment none) and flushes what the invocation stored, also when the invocation failed.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { restoreEnvAfterAll } from '../../../test-support/env';
import { lambdaHandler } from '../middleware';
import { stdoutOf } from '../../../test-support/stdout';

restoreEnvAfterAll();

// The Jest set-up silences EMF output and keeps logs at WARN; this suite is about both.
process.env.POWERTOOLS_METRICS_DISABLED = 'false';
delete process.env.POWERTOOLS_DEV;

const context = {
  functionName: 'probe-function',
  awsRequestId: 'request-1',
  invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:probe-function',
  getRemainingTimeInMillis: () => 10_000,
} as unknown as Context;

test('log lines of an invocation carry the Lambda context', async () => {
  const logger = new Logger({ serviceName: 'probe', logLevel: 'INFO' });
  const handler = lambdaHandler(
    async (event: { n: number }) => {
      logger.info('working');
      return event.n + 1;
    },
    { logger },
  );
  let result: number | undefined;
  const lines = await stdoutOf(async () => (result = await handler({ n: 1 }, context)));
  expect(result).toBe(2);
  expect(lines).toEqual([
    expect.objectContaining({
      message: 'working',
      service: 'probe',
      function_name: 'probe-function',
      function_request_id: 'request-1',
    }),
  ]);
});

test('stored figures are flushed after each invocation, a failed one included; cold start once', async () => {
  process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'on-demand';
  const logger = new Logger({ serviceName: 'probe', logLevel: 'ERROR' });
  const metrics = new Metrics({ namespace: 'ProbeTest' });
  const handler = lambdaHandler(
    async (event: { fail: boolean }) => {
      metrics.addMetric('Probes', MetricUnit.Count, 1);
      if (event.fail) throw new Error('probe failed');
      return 'done';
    },
    { logger, metrics },
  );
  const first = await stdoutOf(() => handler({ fail: false }, context));
  expect(first).toEqual([
    expect.objectContaining({ ColdStart: 1, function_name: 'probe-function' }),
    expect.objectContaining({ Probes: 1 }),
  ]);
  let error: unknown;
  const failed = await stdoutOf(() =>
    handler({ fail: true }, context).catch((err: unknown) => (error = err)),
  );
  expect((error as Error).message).toBe('probe failed');
  expect(failed).toEqual([expect.objectContaining({ Probes: 1 })]);
});

test('a provisioned environment counts no cold start', async () => {
  // Lambda sets this; provisioned-concurrency environments are initialised before any request.
  process.env.AWS_LAMBDA_INITIALIZATION_TYPE = 'provisioned-concurrency';
  const metrics = new Metrics({ namespace: 'ProbeTest' });
  const handler = lambdaHandler(
    async () => {
      metrics.addMetric('Probes', MetricUnit.Count, 1);
    },
    { logger: new Logger({ serviceName: 'probe', logLevel: 'ERROR' }), metrics },
  );
  const lines = await stdoutOf(() => handler({}, context));
  expect(lines.map((line) => Object.keys(line).filter((k) => k === 'ColdStart' || k === 'Probes'))).toEqual([
    ['Probes'],
  ]);
});
