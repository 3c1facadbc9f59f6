import { startStandIns, type StandIns } from '../stand-ins';
import { localHsmEnv } from '../token';

/**
 * Starts DynamoDB Local and ElasticMQ once for the whole Jest run (or uses configured endpoints) and
 * points every worker at them and at the local SoftHSM token through environment variables.
 */
export default async function globalSetup(): Promise<void> {
  const standIns = await startStandIns();
  Object.assign(process.env, standIns.env(), localHsmEnv());
  // Quiet by default: EMF lines and INFO logs would bury the test report (a test may turn them back on).
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.LOG_LEVEL ??= 'WARN';
  (globalThis as { __standIns?: StandIns }).__standIns = standIns;
}
