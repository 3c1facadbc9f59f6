/**
 * Scheduled (EventBridge, every 15 minutes) -> this function (reserved concurrency 1): wires the pool,
 * the HSM, the audit log, the demand and keygen-rate tables and the keygen policy (forecast-driven plan,
 * or fixed targets) into the core's keygen cycle (lambdas/core/src/pool/keygen-cycle.ts), which stops well
 * before the function's deadline so nothing is left half-written.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { DemandRepository, KeygenStatsRepository } from '@pipeline/adapters/dynamodb';
import { PowertoolsPoolMetrics } from '@pipeline/adapters/metrics';
import {
  decideKeygen,
  runKeygenCycle,
  type KeygenCycleDeps,
  type KeygenCycleInput,
  type KeygenResult,
} from '@pipeline/core/pool';
import type { KeygenFunctionConfig } from '@pipeline/config';
import { headSigningAuditLog } from '../shared/audit';
import { sharedHsm } from '../shared/hsm';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger, createMetrics } from '../shared/observability';
import { wire } from '../shared/wiring';

/** Time kept in reserve at the end of an invocation: the last batch must be written before the deadline. */
const DEADLINE_MARGIN_MS = 20_000;

export interface KeygenHandlerDeps {
  /** The cycle's ports: the HSM and the audit log resolve on first use (one login per environment). */
  readonly cycle: () => Promise<KeygenCycleDeps>;
  readonly settings: Omit<KeygenCycleInput, 'deadline'>;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export function createKeygenHandler(deps: KeygenHandlerDeps): LambdaHandler<unknown, KeygenResult> {
  const { metrics } = deps;
  return lambdaHandler(
    async (_event: unknown, context: Context) => {
      // Every run reports the keys it added, zero included; a failed run says 0 here, and the keys it
      // added before failing in the per-type KeysAdded.
      let generated = 0;
      try {
        const result = await runKeygenCycle(await deps.cycle(), {
          ...deps.settings,
          deadline: Date.now() + Math.max(0, context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS),
        });
        generated = Object.values(result.generated).reduce((sum, n) => sum + n, 0);
        return result;
      } finally {
        metrics.addMetric('KeysGenerated', MetricUnit.Count, generated);
      }
    },
    { logger: deps.logger, metrics },
  );
}

/** The keygen function's dependencies from configuration: pool, HSM, audit log, demand and policy. */
export function wireKeygen(functionConfig: KeygenFunctionConfig): KeygenHandlerDeps {
  const logger = createLogger('keygen');
  const metrics = createMetrics();
  const { config, doc, pool, keyPool } = wire(functionConfig);
  const demand = new DemandRepository(doc, { tableName: config.tables.demand });
  const stats = new KeygenStatsRepository(doc, { tableName: config.tables.demand });
  const { planning, keygenPolicy } = functionConfig;
  const auditLog = headSigningAuditLog(doc, functionConfig, logger);
  const poolMetrics = new PowertoolsPoolMetrics(metrics);
  return {
    cycle: async () => {
      const [hsm, audit] = await Promise.all([sharedHsm(config), auditLog()]);
      return {
        pool: keyPool,
        hsm,
        audit,
        metrics: poolMetrics,
        decide: (available) =>
          decideKeygen({
            config: keygenPolicy,
            planning,
            available,
            history: (keyTypes) => demand.history(keyTypes, planning.historyWeeks),
            measuredRate: (keyType) => stats.rate(keyType),
          }),
        observeRate: (keyType, generated, durationMs) => stats.observe(keyType, generated, durationMs),
        log: logger,
      };
    },
    settings: {
      wrapKeyLabel: config.hsm.wrapKeyLabel,
      hsmProfile: config.hsm.profile,
      maxAgeSeconds: pool.keyMaxAgeSeconds,
      fillParallelism: pool.fillParallelism,
    },
    logger,
    metrics,
  };
}
