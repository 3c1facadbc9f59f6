import { ENV } from '@pipeline/config';
import { SCHEDULES, TABLES } from '@pipeline/resources';
import { signQueueEnv, tableEnv, type FunctionSpec } from './spec';

/**
 * Recovers lost messages: the requests table and the queue only (no pool, certificates, audit or HSM); and
 * retires unused one-time credentials through the revocation function.
 */
export const reconcile: FunctionSpec = {
  name: 'reconcile',
  description:
    'Scheduled: requeues sign requests left open without a message, fails those requeues cannot finish, revokes unused one-time credentials',
  memorySize: 256,
  schedule: SCHEDULES.reconcile,
  network: {
    kind: 'endpoints-only',
    securityGroupDescription: 'Signing pipeline reconciler (no HSM access)',
  },
  environment: (deps) => ({
    ...signQueueEnv(deps),
    ...tableEnv(deps, 'requests'),
    [ENV.REVOKE_FUNCTION_NAME]: deps.fn('revoke').functionArn,
  }),
  grants: (grant) => {
    // List open requests (the sparse index), read one, count a requeue or fail it (conditional updates);
    // send a fresh message.
    grant.table('requests', 'GetItem', 'UpdateItem');
    grant.queryIndex('requests', TABLES.requests.globalSecondaryIndexes[0].indexName);
    grant.tableKey();
    grant.sendsToQueue('sqs:SendMessage');
    // An unused one-time credential's certificate is revoked (cessationOfOperation) by the revocation
    // function, the one writer of revocations; the held listing is the same sparse index's HELD# part.
    grant.invoke('revoke');
  },
};
