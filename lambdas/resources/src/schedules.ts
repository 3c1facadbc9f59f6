/**
 * Scheduled work, shared by the CDK app (EventBridge rule, function timeout and concurrency) and the local
 * runner. Keygen refills the pool to its targets; one run at a time, since concurrent fills would overshoot.
 * The reconciler recovers open requests whose message was lost (see core/reconcile.ts). The JWKS refresher
 * keeps the identity providers' keys where functions without internet egress can read them. The audit
 * checkpointer signs and anchors checkpoints of the audit log within seconds of every append.
 */
export interface ScheduleDefinition {
  /** CDK construct id of the rule. */
  readonly id: string;
  readonly description: string;
  /** Period between runs, minutes (EventBridge `rate(...)`). */
  readonly rateMinutes: number;
  /** Function timeout: a run must finish (its last batch written) before the next may start. */
  readonly timeoutSeconds: number;
  /** Reserved concurrency of the target function. */
  readonly reservedConcurrency: number;
}

export const SCHEDULES = {
  keygen: {
    id: 'KeygenSchedule',
    description: 'Removes expired pool keys and fills the key pool up to its targets',
    rateMinutes: 15,
    timeoutSeconds: 15 * 60,
    reservedConcurrency: 1,
  },
  crl: {
    id: 'CrlSchedule',
    description: 'Publishes the CRLs and CA certificates, and renews the OCSP responder certificate when due',
    rateMinutes: 30,
    timeoutSeconds: 120,
    reservedConcurrency: 1,
  },
  jwksRefresh: {
    id: 'JwksRefreshSchedule',
    description: "Copies the trusted identity providers' signing keys (JWKS) into SSM parameters",
    rateMinutes: 15,
    timeoutSeconds: 60,
    reservedConcurrency: 1,
  },
  auditCheckpoint: {
    id: 'AuditCheckpointSchedule',
    description:
      'Signs a checkpoint of every audit chain head every few seconds while they move, and anchors it outside the table',
    // EventBridge's shortest rate; the function loops within the minute (AUDIT_CHECKPOINT_INTERVAL_SECONDS).
    rateMinutes: 1,
    timeoutSeconds: 75,
    reservedConcurrency: 1,
  },
  reconcile: {
    id: 'ReconcileSchedule',
    description:
      'Requeues sign requests left open without a message, fails those requeues cannot finish, and retires unused one-time credentials',
    rateMinutes: 5,
    timeoutSeconds: 120,
    reservedConcurrency: 1,
  },
} as const satisfies Record<string, ScheduleDefinition>;
