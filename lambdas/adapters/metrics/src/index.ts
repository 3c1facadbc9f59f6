export * from './powertools-pool-metrics';
