export { PowertoolsPoolMetrics } from './powertools-pool-metrics';
