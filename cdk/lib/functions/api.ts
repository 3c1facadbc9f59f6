import { ENV } from '@pipeline/config';
import { TABLES } from '@pipeline/resources';
import { dssExtEnv, poolEnv, signQueueEnv, tableEnv, type FunctionSpec } from './spec';

/** The sign request API: DynamoDB and SQS only, no route to the HSM ports. */
export const api: FunctionSpec = {
  name: 'api',
  description: 'Sign request API: validates, records and queues requests; serves results and health',
  memorySize: 512,
  timeoutSeconds: 29,
  network: {
    kind: 'endpoints-only',
    securityGroupDescription: 'Signing pipeline API function (no HSM access)',
  },
  environment: (deps) => ({
    ...poolEnv(deps),
    ...deps.identity.environment(),
    ...dssExtEnv(deps),
    ...signQueueEnv(deps),
    [ENV.REVOKE_FUNCTION_NAME]: deps.fn('revoke').functionArn,
    ...tableEnv(deps, 'requests', 'keyPool', 'demand', 'assertions'),
  }),
  grants: (grant) => {
    // Create/read/discard request records (and read open ones' key type and client, for admission); read
    // pool counters (BatchGetItem of `#COUNT` items only: no Query, so it cannot enumerate wrapped keys,
    // and no writes to the pool).
    grant.table('requests', 'PutItem', 'GetItem', 'DeleteItem', 'BatchGetItem');
    grant.table('keyPool', 'BatchGetItem');
    // Demand history: one atomic counter increment per accepted request (the forecast's input).
    grant.table('demand', 'UpdateItem');
    // Identity assertions: one conditional put per accepted assertion (single use), and the issuers' and
    // registered clients' keys: it refuses bad assertions early.
    grant.table('assertions', 'PutItem');
    grant.readsIdentityKeys();
    // DSS-Ext evidence, where the door is deployed: checked against the federation's identity providers.
    grant.readsFederationMetadata();
    grant.tableKey();
    // Queue: send and depth.
    grant.sendsToQueue('sqs:SendMessage', 'sqs:GetQueueAttributes');
    // It may revoke (never issue).
    grant.invoke('revoke');
    // The sparse index of open requests: it counts them per key type and client for its admission (then
    // reads those two attributes with BatchGetItem).
    grant.queryIndex('requests', TABLES.requests.globalSecondaryIndexes[0].indexName);
  },
};
