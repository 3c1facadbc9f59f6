/**
 * The EMF adapter writes CloudWatch Embedded Metric Format documents: each figure with its KeyType
 * dimension, readable by CloudWatch from the function's log output.
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import { PowertoolsPoolMetrics } from '../src';
import { restoreEnvAfterAll } from '../../../test-support/env';
import { stdoutOf } from '../../../test-support/stdout';

restoreEnvAfterAll();

// The Jest set-up silences EMF output for the other suites; this one is about that output.
process.env.POWERTOOLS_METRICS_DISABLED = 'false';

test('each figure is one EMF document with the KeyType dimension', async () => {
  const metrics = new PowertoolsPoolMetrics(new Metrics({ namespace: 'PoolTest' }));
  const docs = await stdoutOf(async () => {
    metrics.count('KeysClaimed', 'RSA-2048');
    metrics.count('OnTheFlyFallbacks', 'EC-P256', 2);
    metrics.gauge('KeysAvailable', 'RSA-2048', 117);
  });
  expect(docs).toHaveLength(3);
  expect(docs[0]).toMatchObject({ KeyType: 'RSA-2048', KeysClaimed: 1 });
  expect(docs[1]).toMatchObject({ KeyType: 'EC-P256', OnTheFlyFallbacks: 2 });
  expect(docs[2]).toMatchObject({ KeyType: 'RSA-2048', KeysAvailable: 117 });
  const aws = docs[0]._aws as { CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][] }> };
  expect(aws.CloudWatchMetrics[0].Namespace).toBe('PoolTest');
  expect(aws.CloudWatchMetrics[0].Dimensions[0]).toContain('KeyType');
});
