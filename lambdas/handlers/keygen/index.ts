/**
 * Scheduled (EventBridge, every 15 minutes) -> this function (reserved concurrency 1): wires the pool,
 * the HSM, the audit log, the demand and keygen-rate tables and the keygen policy (forecast-driven plan,
 * or fixed targets) into the core's keygen cycle (lambdas/core/src/pool/keygen-cycle.ts), which stops well
 * before the function's deadline so nothing is left half-written.
 */
import type { Context } from 'aws-lambda';
import { DemandRepository, KeygenStatsRepository } from '@pipeline/adapters/dynamodb';
import { PowertoolsPoolMetrics } from '@pipeline/adapters/metrics';
import { fanOutMetrics, runKeygenCycle, type KeygenResult, type PoolMetrics } from '@pipeline/core';
import { loadKeygenPolicyConfig, loadPlanningConfig } from '@pipeline/config';
import { TABLES, tableName } from '@pipeline/resources';
import { headSigningAuditLog } from '../shared/audit';
import { sharedHsm } from '../shared/hsm';
import { createLogger, wire } from '../shared/wiring';
import { decide } from './policy';

const logger = createLogger('keygen');
const { config, doc, pool, keyPool } = wire();
const demand = new DemandRepository(doc, { tableName: tableName(TABLES.demand) });
const stats = new KeygenStatsRepository(doc, { tableName: tableName(TABLES.demand) });
const planning = loadPlanningConfig();
const keygenPolicy = loadKeygenPolicyConfig();
const powertools = PowertoolsPoolMetrics.create();
/** Time kept in reserve at the end of an invocation: the last batch must be written before the deadline. */
const DEADLINE_MARGIN_MS = 20_000;

/** Optional extra sink (the local runner passes its in-memory metrics for the health endpoint). */
export type { KeygenResult };

export async function runKeygen(context: Context, extraMetrics?: PoolMetrics): Promise<KeygenResult> {
  const [hsm, log] = await Promise.all([sharedHsm(), headSigningAuditLog(logger)]);
  return runKeygenCycle(
    {
      pool: keyPool,
      hsm,
      audit: log,
      metrics: extraMetrics ? fanOutMetrics(powertools, extraMetrics) : powertools,
      decide: (available) =>
        decide({
          config: keygenPolicy,
          planning,
          available,
          history: (keyTypes) => demand.history(keyTypes, planning.historyWeeks),
          measuredRate: (keyType) => stats.rate(keyType),
        }),
      observeRate: (keyType, generated, durationMs) => stats.observe(keyType, generated, durationMs),
      log: logger,
    },
    {
      deadline: Date.now() + Math.max(0, context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS),
      wrapKeyLabel: config.hsm.wrapKeyLabel,
      hsmProfile: config.hsm.profile,
      maxAgeSeconds: pool.keyMaxAgeSeconds,
      fillParallelism: pool.fillParallelism,
    },
  );
}

export async function handler(_event: unknown, context: Context): Promise<KeygenResult> {
  // Every log line of the invocation carries the Lambda context (function, request id, cold start).
  if (context) logger.addContext(context);
  powertools.coldStart(context.functionName);
  return runKeygen(context);
}
