import { startIdpProcess, type IdpProcess } from '../idp/process';
import { localIdentityEnv } from '../idp/trust';
import { startStandIns, type StandIns } from '../stand-ins';
import { localHsmEnv } from '../token';

/**
 * Starts DynamoDB Local, ElasticMQ and the local OpenID Provider once for the whole Jest run (or uses
 * configured endpoints) and points every worker at them and at the local SoftHSM token through
 * environment variables.
 */
export default async function globalSetup(): Promise<void> {
  const [standIns, idp] = await Promise.all([startStandIns(), startIdpProcess()]);
  Object.assign(process.env, standIns.env(), localHsmEnv(), localIdentityEnv(idp));
  // Quiet by default: EMF lines and INFO logs would bury the test report (a test may turn them back on).
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  process.env.LOG_LEVEL ??= 'WARN';
  Object.assign(globalThis as { __standIns?: StandIns; __idp?: IdpProcess }, {
    __standIns: standIns,
    __idp: idp,
  });
}
