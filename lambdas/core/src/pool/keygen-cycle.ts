/**
 * One run of the keygen schedule, as orchestration over ports: remove expired keys (each audited),
 * rewrite the pool counters from the items, let the policy decide targets, fill each key type's deficit
 * (cheapest types first, until the deadline), record the measured generation rate, and report the pool.
 * (Audit checkpoints are the checkpointer's.) The handler wires the adapters and the policy; nothing here reads the
 * environment.
 */
import { KEY_TYPES, type KeyType } from '../shared/algorithms';
import type { AuditSink } from '../audit';
import { fillPool, type FillPoolResult } from './fill-pool';
import type { KeyPoolStore, PoolHsm } from './pool';
import type { PoolMetrics } from './pool-metrics';
import type { Plan } from '../planning';

/** `forecast`: the planner's targets from the demand forecast; `targets`: fixed levels. */
export type KeygenPolicyName = 'forecast' | 'targets';

/** What the keygen policy decided for this run (targets, low-water marks, whether generating is allowed). */
export interface KeygenDecision {
  readonly policy: KeygenPolicyName;
  /** Keys wanted in the pool now, per key type. */
  readonly targets: Partial<Record<KeyType, number>>;
  /** Whether the current hour allows regular generation (the low-water mark ignores this). */
  readonly generationAllowed: boolean;
  readonly lowWater: Partial<Record<KeyType, number>>;
  readonly warnings: readonly string[];
  /** The `forecast` policy's plan. */
  readonly plan?: Plan;
}

export interface KeygenCycleDeps {
  readonly pool: KeyPoolStore & { recount(keyType: KeyType, nowSeconds: number): Promise<number> };
  readonly hsm: Pick<PoolHsm, 'generateKeyPair' | 'wrapPrivateKey' | 'destroy'>;
  readonly audit: AuditSink;
  readonly metrics: PoolMetrics;
  /** The keygen policy, given the pool after expiry removal and recount. */
  readonly decide: (available: Partial<Record<KeyType, number>>) => Promise<KeygenDecision>;
  /** Records a fill's measured generation rate (the planner's capacity input). */
  readonly observeRate: (keyType: KeyType, generated: number, durationMs: number) => Promise<unknown>;
  readonly log: {
    info(message: string, fields: Record<string, unknown>): void;
    warn(message: string, fields: Record<string, unknown>): void;
    error(message: string, fields: Record<string, unknown>): void;
  };
  readonly clock?: () => number;
}

export interface KeygenCycleInput {
  /** Epoch ms after which no generation starts. */
  readonly deadline: number;
  readonly wrapKeyLabel: string;
  readonly hsmProfile: string;
  readonly maxAgeSeconds: number;
  readonly fillParallelism: number;
}

export interface KeygenResult {
  readonly policy: string;
  readonly generationAllowed: boolean;
  readonly generated: Partial<Record<KeyType, number>>;
  readonly expiredRemoved: number;
  readonly available: Partial<Record<KeyType, number>>;
  readonly targets: Partial<Record<KeyType, number>>;
  readonly keygenMsPerKey: Partial<Record<KeyType, number>>;
  readonly warnings: readonly string[];
}

export async function runKeygenCycle(deps: KeygenCycleDeps, input: KeygenCycleInput): Promise<KeygenResult> {
  const { pool, metrics, log } = deps;
  const nowSeconds = Math.floor((deps.clock ?? Date.now)() / 1000);
  let expiredRemoved = 0;
  for (const keyType of KEY_TYPES) {
    const expired: string[] = [];
    const removed = await pool.removeExpired(keyType, nowSeconds, (keyId) => expired.push(keyId));
    await deps.audit.appendMany(
      expired.map((keyId) => ({ type: 'pool.key-discarded', keyId, reason: 'expired' })),
    );
    if (removed > 0) metrics.count('ExpiredKeysRemoved', keyType, removed);
    expiredRemoved += removed;
  }
  // DynamoDB's TTL deletes never decrement a counter: rewrite the counters from the items each run, so
  // drift lasts at most one schedule period (claims racing the recount may leave it off by a few keys).
  for (const keyType of KEY_TYPES) await pool.recount(keyType, nowSeconds);
  const before = await pool.available(KEY_TYPES);
  const decision = await deps.decide(before);
  for (const warning of decision.warnings) log.warn('capacity plan warning', { warning });

  const generated: Partial<Record<KeyType, number>> = {};
  const keygenMsPerKey: Partial<Record<KeyType, number>> = {};
  // Cheapest first: EC keys take milliseconds, so they are never starved by slow RSA generation.
  const order = [...KEY_TYPES].sort((a, b) => Number(a.startsWith('RSA')) - Number(b.startsWith('RSA')));
  for (const keyType of order) {
    const goal = decision.generationAllowed
      ? Math.max(decision.targets[keyType] ?? 0, decision.lowWater[keyType] ?? 0)
      : (decision.lowWater[keyType] ?? 0);
    const deficit = goal - (before[keyType] ?? 0);
    if (deficit <= 0 || (deps.clock ?? Date.now)() >= input.deadline) continue;
    const result: FillPoolResult = await fillPool(
      { hsm: deps.hsm, pool, metrics, audit: deps.audit, clock: deps.clock },
      {
        keyType,
        count: deficit,
        parallelism: input.fillParallelism,
        deadline: input.deadline,
        wrapKeyLabel: input.wrapKeyLabel,
        hsmProfile: input.hsmProfile,
        maxAgeSeconds: input.maxAgeSeconds,
      },
    );
    generated[keyType] = result.stored;
    if (result.generated > 0) {
      keygenMsPerKey[keyType] = Math.round((result.durationMs * input.fillParallelism) / result.generated);
      await deps.observeRate(keyType, result.generated, result.durationMs);
    }
    log.info('pool filled', { keyType, target: goal, ...result });
  }
  const available = await pool.available(KEY_TYPES);
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
  };
}
