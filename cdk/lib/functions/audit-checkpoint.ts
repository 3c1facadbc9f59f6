import { ENV } from '@pipeline/config';
import { SCHEDULES } from '@pipeline/resources';
import { loginEnv, tableEnv, type FunctionSpec } from './spec';

/** The checkpointer: the audit key is on the pool user's token; it needs neither pool nor wrapping key. */
export const auditCheckpoint: FunctionSpec = {
  name: 'audit-checkpoint',
  description:
    'Scheduled (looping within the minute): signs a checkpoint of every audit chain head while they move, anchors it in the Object Lock bucket',
  memorySize: 512,
  schedule: SCHEDULES.auditCheckpoint,
  network: { kind: 'hsm', cryptoUser: 'pool' },
  environment: (deps) => ({
    ...loginEnv(deps, 'pool'),
    [ENV.AUDIT_CHECKPOINT_INTERVAL_SECONDS]: String(deps.settings.audit.checkpointIntervalSeconds),
    ...tableEnv(deps, 'audit'),
  }),
  grants: (grant) => {
    // Every chain head in one BatchGetItem, the last checkpoint, a new one (conditional puts of
    // CHECKPOINT items only).
    grant.table('audit', 'GetItem', 'BatchGetItem');
    grant.tableItems('audit', ['PutItem'], ['CHECKPOINT', 'CHECKPOINT#HEAD']);
    grant.tableKey();
    grant.login();
  },
  // It writes anchors (never replacing one: Object Lock keeps every version) and reads one back when a
  // write finds its key taken. Nothing else may touch the bucket.
  connectAuditAnchors: (grant, bucket) => {
    grant.fn.addEnvironment(ENV.AUDIT_ANCHOR_TARGET, `s3:${bucket.bucketName}`);
    grant.statement(['s3:PutObject'], [bucket.arnForObjects('checkpoints/*')]);
    grant.readsObjects(bucket, ['checkpoints/*']);
  },
};
