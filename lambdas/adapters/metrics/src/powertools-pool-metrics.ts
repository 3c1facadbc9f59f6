/**
 * PoolMetrics over Powertools Metrics: CloudWatch Embedded Metric Format lines on stdout, which Lambda
 * ships to CloudWatch Logs and CloudWatch turns into metrics. Every figure carries a KeyType dimension.
 */
import { MetricUnit, Metrics } from '@aws-lambda-powertools/metrics';
import type { KeyType, PoolCounterName, PoolGaugeName, PoolMetrics } from '@pipeline/core';

export class PowertoolsPoolMetrics implements PoolMetrics {
  public constructor(private readonly metrics: Metrics) {}

  /** A Metrics instance for the pool (the service name comes from POWERTOOLS_SERVICE_NAME when set). */
  public static create(namespace = 'SigningPipeline'): PowertoolsPoolMetrics {
    return new PowertoolsPoolMetrics(new Metrics({ namespace }));
  }

  public count(name: PoolCounterName, keyType: KeyType, value = 1): void {
    this.emit(name, keyType, value);
  }

  public gauge(name: PoolGaugeName, keyType: KeyType, value: number): void {
    this.emit(name, keyType, value);
  }

  /**
   * A `ColdStart` count on the first invocation of an on-demand execution environment (Powertools emits
   * it once, with the function name as dimension); later calls, and provisioned environments, emit nothing.
   */
  public coldStart(functionName?: string): void {
    this.metrics.captureColdStartMetric(functionName);
  }

  /** Flushes buffered figures (call at the end of an invocation, or use Powertools' logMetrics). */
  public publish(): void {
    this.metrics.publishStoredMetrics();
  }

  private emit(name: string, keyType: KeyType, value: number): void {
    // One EMF document per figure: the KeyType dimension differs between figures of one invocation.
    const single = this.metrics.singleMetric();
    single.addDimension('KeyType', keyType);
    single.addMetric(name, MetricUnit.Count, value);
  }
}
