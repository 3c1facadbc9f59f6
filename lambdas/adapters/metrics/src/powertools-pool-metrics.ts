/**
 * PoolMetrics over Powertools Metrics: CloudWatch Embedded Metric Format lines on stdout, which Lambda
 * ships to CloudWatch Logs and CloudWatch turns into metrics. Every figure carries a KeyType dimension.
 */
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { KeyType } from '@pipeline/core/shared';
import type { PoolCounterName, PoolGaugeName, PoolMetrics } from '@pipeline/core/pool';

export class PowertoolsPoolMetrics implements PoolMetrics {
  public constructor(private readonly metrics: Metrics) {}

  public count(name: PoolCounterName, keyType: KeyType, value = 1): void {
    this.emit(name, keyType, value);
  }

  public gauge(name: PoolGaugeName, keyType: KeyType, value: number): void {
    this.emit(name, keyType, value);
  }

  private emit(name: string, keyType: KeyType, value: number): void {
    // One EMF document per figure: the KeyType dimension differs between figures of one invocation.
    const single = this.metrics.singleMetric();
    single.addDimension('KeyType', keyType);
    single.addMetric(name, MetricUnit.Count, value);
  }
}
