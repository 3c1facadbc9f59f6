/**
 * The EMF adapter writes CloudWatch Embedded Metric Format documents: each figure with its KeyType
 * dimension, readable by CloudWatch from the function's log output.
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import { PowertoolsPoolMetrics } from '../src';
import { restoreEnvAfterAll } from '../../../test-support/env';

restoreEnvAfterAll();

// The Jest set-up silences EMF output for the other suites; this one is about that output.
process.env.POWERTOOLS_METRICS_DISABLED = 'false';

function captureStdout(fn: () => void): string[] {
  const lines: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  });
  try {
    fn();
  } finally {
    spy.mockRestore();
  }
  return lines;
}

test('each figure is one EMF document with the KeyType dimension', () => {
  const metrics = new PowertoolsPoolMetrics(new Metrics({ namespace: 'PoolTest' }));
  const lines = captureStdout(() => {
    metrics.count('KeysClaimed', 'RSA-2048');
    metrics.count('OnTheFlyFallbacks', 'EC-P256', 2);
    metrics.gauge('KeysAvailable', 'RSA-2048', 117);
  });
  const docs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(docs).toHaveLength(3);
  expect(docs[0]).toMatchObject({ KeyType: 'RSA-2048', KeysClaimed: 1 });
  expect(docs[1]).toMatchObject({ KeyType: 'EC-P256', OnTheFlyFallbacks: 2 });
  expect(docs[2]).toMatchObject({ KeyType: 'RSA-2048', KeysAvailable: 117 });
  const aws = docs[0]._aws as { CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][] }> };
  expect(aws.CloudWatchMetrics[0].Namespace).toBe('PoolTest');
  expect(aws.CloudWatchMetrics[0].Dimensions[0]).toContain('KeyType');
});
