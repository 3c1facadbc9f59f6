import { ENV } from '@pipeline/config';
import { SCHEDULES } from '@pipeline/resources';
import { poolUserEnv, tableEnv, type FunctionSpec } from './spec';

/** Fills the pool as its crypto user, with the pool settings and the wrapping key. */
export const keygen: FunctionSpec = {
  name: 'keygen',
  description: 'Scheduled: removes expired pool keys and fills the pool to its targets',
  memorySize: 1024,
  schedule: SCHEDULES.keygen,
  network: { kind: 'hsm', cryptoUser: 'pool' },
  environment: (deps) => ({
    ...poolUserEnv(deps),
    // Forecast-driven by default; POOL_TARGETS serves the `targets` policy and the dashboard's targets.
    [ENV.KEYGEN_POLICY]: 'forecast',
    [ENV.POOL_TARGETS]: deps.settings.pool.targetsSpec,
    ...tableEnv(deps, 'keyPool', 'demand', 'audit'),
  }),
  grants: (grant) => {
    // Add keys (batch write), remove expired ones, maintain and read counters.
    grant.table('keyPool', 'BatchWriteItem', 'BatchGetItem', 'Query', 'DeleteItem', 'UpdateItem');
    // Forecast input (demand history) and its own measured keygen rate.
    grant.table('demand', 'Query', 'GetItem', 'PutItem');
    // Batch and expiry events.
    grant.appendsAudit();
    grant.tableKey();
    grant.login();
  },
};
