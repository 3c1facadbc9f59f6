import { SCHEDULES, TABLES } from '@pipeline/resources';
import { signQueueEnv, tableEnv, type FunctionSpec } from './spec';

/** Recovers lost messages: the requests table and the queue only (no pool, certificates, audit or HSM). */
export const reconcile: FunctionSpec = {
  name: 'reconcile',
  description:
    'Scheduled: requeues sign requests left open without a message, fails those requeues cannot finish',
  memorySize: 256,
  schedule: SCHEDULES.reconcile,
  network: {
    kind: 'endpoints-only',
    securityGroupDescription: 'Signing pipeline reconciler (no HSM access)',
  },
  environment: (deps) => ({ ...signQueueEnv(deps), ...tableEnv(deps, 'requests') }),
  grants: (grant) => {
    // List open requests (the sparse index), read one, count a requeue or fail it (conditional updates);
    // send a fresh message.
    grant.table('requests', 'GetItem', 'UpdateItem');
    grant.queryIndex('requests', TABLES.requests.globalSecondaryIndexes[0].indexName);
    grant.tableKey();
    grant.sendsToQueue('sqs:SendMessage');
  },
};
