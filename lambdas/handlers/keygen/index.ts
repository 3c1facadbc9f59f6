/**
 * Scheduled (EventBridge, every 15 minutes) -> this function (reserved concurrency 1): removes expired
 * keys, repairs the pool counters, decides per key type how many keys the pool should hold
 * (forecast-driven plan, or fixed targets), generates the difference in the HSM in the hours the plan allows (always below the low-water mark),
 * stops well before the function's deadline so nothing is left half-written, and records its own keygen
 * rate for the next plan.
 */
import type { Context } from 'aws-lambda';
import { DemandRepository } from '../../adapters/dynamodb/src/demand-repository';
import { KeygenStatsRepository } from '../../adapters/dynamodb/src/keygen-stats-repository';
import { PowertoolsPoolMetrics } from '../../adapters/metrics/src';
import { createAuditLog, type AuditLog } from '../../audit/src';
import {
  KEY_TYPES,
  errorCode,
  fanOutMetrics,
  fillPool,
  type KeyType,
  type PoolMetrics,
} from '../../core/src';
import { loadPlanningConfig } from '../../config/src/planning-config';
import { TABLES, tableName } from '../../resources/src';
import { sharedHsm } from '../shared/hsm';
import { createLogger, wire } from '../shared/wiring';
import { decide, type KeygenPolicyName } from './policy';

const logger = createLogger('keygen');
const { config, doc, pool, keyPool } = wire();
const demand = new DemandRepository(doc, { tableName: tableName(TABLES.demand) });
const stats = new KeygenStatsRepository(doc, { tableName: tableName(TABLES.demand) });
const planning = loadPlanningConfig();
const powertools = PowertoolsPoolMetrics.create();
/** Time kept in reserve at the end of an invocation: the last batch must be written before the deadline. */
const DEADLINE_MARGIN_MS = 20_000;

let auditLog: Promise<AuditLog> | undefined;
/** The audit log with the HSM's audit key as checkpoint signer; created once, retried after a failure. */
function audit(): Promise<AuditLog> {
  auditLog ??= sharedHsm()
    .then((hsm) =>
      // Without the audit key the pool still fills and events are still appended; checkpoints then fail
      // (logged as errors on every run) until the key is provisioned.
      createAuditLog({ doc, hsm }).catch((err: unknown) => {
        logger.error('audit key unavailable: no checkpoints', { errorCode: errorCode(err) });
        return createAuditLog({ doc });
      }),
    )
    .catch((err: unknown) => {
      auditLog = undefined;
      throw err;
    });
  return auditLog;
}

export interface KeygenResult {
  readonly policy: KeygenPolicyName;
  readonly generationAllowed: boolean;
  readonly generated: Partial<Record<KeyType, number>>;
  readonly expiredRemoved: number;
  readonly available: Partial<Record<KeyType, number>>;
  readonly targets: Partial<Record<KeyType, number>>;
  readonly keygenMsPerKey: Partial<Record<KeyType, number>>;
  readonly warnings: readonly string[];
  /** Sequence of the signed audit checkpoint this run wrote (undefined when it failed). */
  readonly auditCheckpoint?: number;
}

/** Optional extra sink (the local runner passes its in-memory metrics for the health endpoint). */
export async function runKeygen(context: Context, extraMetrics?: PoolMetrics): Promise<KeygenResult> {
  const metrics = extraMetrics ? fanOutMetrics(powertools, extraMetrics) : powertools;
  const hsm = await sharedHsm();
  const log = await audit();
  const now = Date.now();
  const deadline = now + Math.max(0, context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS);
  let expiredRemoved = 0;
  for (const keyType of KEY_TYPES) {
    const expired: string[] = [];
    const removed = await keyPool.removeExpired(keyType, Math.floor(now / 1000), (keyId) =>
      expired.push(keyId),
    );
    await log.appendMany(expired.map((keyId) => ({ type: 'pool.key-discarded', keyId, reason: 'expired' })));
    if (removed > 0) metrics.count('ExpiredKeysRemoved', keyType, removed);
    expiredRemoved += removed;
  }
  // DynamoDB's TTL deletes never decrement a counter: rewrite the counters from the items each run, so
  // drift lasts at most one schedule period (claims racing the recount may leave it off by a few keys).
  for (const keyType of KEY_TYPES) await keyPool.recount(keyType, Math.floor(now / 1000));
  const before = await keyPool.available(KEY_TYPES);
  const decision = await decide({
    env: process.env,
    planning,
    available: before,
    history: (keyTypes) => demand.history(keyTypes, planning.historyWeeks),
    measuredRate: (keyType) => stats.rate(keyType),
  });
  for (const warning of decision.warnings) logger.warn('capacity plan warning', { warning });

  const generated: Partial<Record<KeyType, number>> = {};
  const keygenMsPerKey: Partial<Record<KeyType, number>> = {};
  // Cheapest first: EC keys take milliseconds, so they are never starved by slow RSA generation.
  const order = [...KEY_TYPES].sort((a, b) => Number(a.startsWith('RSA')) - Number(b.startsWith('RSA')));
  for (const keyType of order) {
    const have = before[keyType] ?? 0;
    const goal = decision.generationAllowed
      ? Math.max(decision.targets[keyType] ?? 0, decision.lowWater[keyType] ?? 0)
      : (decision.lowWater[keyType] ?? 0);
    const deficit = goal - have;
    if (deficit <= 0 || Date.now() >= deadline) continue;
    const result = await fillPool(
      { hsm, pool: keyPool, metrics, audit: log },
      {
        keyType,
        count: deficit,
        parallelism: pool.fillParallelism,
        deadline,
        wrapKeyLabel: config.hsm.wrapKeyLabel,
        hsmProfile: config.hsm.profile,
        maxAgeSeconds: pool.keyMaxAgeSeconds,
      },
    );
    generated[keyType] = result.stored;
    if (result.generated > 0) {
      keygenMsPerKey[keyType] = Math.round((result.durationMs * pool.fillParallelism) / result.generated);
      await stats.observe(keyType, result.generated, result.durationMs);
    }
    logger.info('pool filled', { keyType, target: goal, ...result });
  }
  // The schedule's signed checkpoint of every chain head (the audit key signs in the HSM).
  const checkpoint = await log.checkpoint().then(
    (cp) => cp.body.sequence,
    (err: unknown) => {
      logger.error('audit checkpoint failed', { errorCode: errorCode(err) });
      return undefined;
    },
  );
  const available = await keyPool.available(KEY_TYPES);
  for (const keyType of KEY_TYPES) {
    metrics.gauge('KeysAvailable', keyType, available[keyType] ?? 0);
    metrics.gauge('KeysTarget', keyType, decision.targets[keyType] ?? 0);
    const msPerKey = keygenMsPerKey[keyType];
    if (msPerKey !== undefined) metrics.gauge('KeygenMsPerKey', keyType, msPerKey);
  }
  return {
    policy: decision.policy,
    generationAllowed: decision.generationAllowed,
    generated,
    expiredRemoved,
    available,
    targets: decision.targets,
    keygenMsPerKey,
    warnings: decision.warnings,
    auditCheckpoint: checkpoint,
  };
}

export async function handler(_event: unknown, context: Context): Promise<KeygenResult> {
  // Every log line of the invocation carries the Lambda context (function, request id, cold start).
  if (context) logger.addContext(context);
  return runKeygen(context);
}
