/**
 * Filling the pool: generate key pairs in the HSM, wrap each private key, destroy the in-HSM objects,
 * and store complete items in batches. Pure orchestration over the PoolHsm and KeyPoolStore ports.
 *
 * Guarantees: at most `parallelism` generations run at once; no generation starts at or after the
 * deadline (one already running finishes, so callers leave a margin of one keygen); an item is written
 * whole or not at all (one put per key, never an item without its wrapped key); every in-HSM object is
 * destroyed whether wrapping and storing worked or not.
 */
import { randomUUID } from 'node:crypto';
import pLimit from 'p-limit';
import type { KeyType } from '../shared/algorithms';
import { hashIds, type AuditSink } from '../audit';
import type { PrivateKeyRef } from '../shared/hsm';
import { keyExpiresAt, type KeyPoolStore, type PoolHsm, type PoolKey } from './pool';
import type { PoolMetrics } from './pool-metrics';
import { errorCode } from '../shared/errors';

export interface FillPoolDeps {
  readonly hsm: Pick<PoolHsm, 'generateKeyPair' | 'wrapPrivateKey' | 'destroy'>;
  readonly pool: Pick<KeyPoolStore, 'add'>;
  readonly metrics: PoolMetrics;
  /** The tamper-evident log: one `pool.batch-generated` event per stored batch (count, hash of ids). */
  readonly audit?: AuditSink;
  /** Epoch ms. */
  readonly clock?: () => number;
  readonly newKeyId?: () => string;
}

export interface FillPoolInput {
  readonly keyType: KeyType;
  readonly count: number;
  readonly parallelism: number;
  /** Epoch ms after which no new generation starts. */
  readonly deadline: number;
  readonly wrapKeyLabel: string;
  readonly hsmProfile: string;
  readonly maxAgeSeconds: number;
  /** Keys per store call (the repository splits further into DynamoDB batches of 25). */
  readonly batchSize?: number;
  /** Stop after this many failures in a row (an HSM or table that keeps failing). */
  readonly maxConsecutiveFailures?: number;
}

export interface FillPoolResult {
  readonly requested: number;
  readonly generated: number;
  readonly stored: number;
  /** Keys generated but not stored (wrap or write failed): their HSM objects were destroyed. */
  readonly lost: number;
  readonly failures: number;
  /** In-HSM objects whose destroy failed (they vanish with the session; reported, never hidden). */
  readonly destroyFailures: number;
  readonly stoppedBy: 'done' | 'deadline' | 'failures';
  readonly durationMs: number;
  /** Error codes seen, with counts (codes only: no messages). */
  readonly errorCodes: Readonly<Record<string, number>>;
}

/** One fill's inputs and running tally, shared by its tasks. */
interface FillRun {
  readonly deps: FillPoolDeps;
  readonly input: FillPoolInput;
  readonly clock: () => number;
  readonly newKeyId: () => string;
  readonly maxFailures: number;
  readonly state: {
    generated: number;
    stored: number;
    lost: number;
    failures: number;
    consecutiveFailures: number;
    destroyFailures: number;
    stoppedBy: FillPoolResult['stoppedBy'];
  };
  readonly errorCodes: Record<string, number>;
  /** Wrapped keys generated, not yet written. */
  readonly buffer: PoolKey[];
}

/** A failure counts by its code; enough in a row stop the fill. */
function noteFailure(run: FillRun, err: unknown, knownCode?: string): void {
  const { state, errorCodes } = run;
  state.failures++;
  state.consecutiveFailures++;
  const code = knownCode ?? errorCode(err);
  errorCodes[code] = (errorCodes[code] ?? 0) + 1;
  if (state.consecutiveFailures >= run.maxFailures) state.stoppedBy = 'failures';
}

/** Writes the buffered keys to the pool, then the batch's audit event. */
async function flush(run: FillRun): Promise<void> {
  const { deps, input, state } = run;
  const batch = run.buffer.splice(0, run.buffer.length);
  if (batch.length === 0) return;
  try {
    const result = await deps.pool.add(batch);
    state.stored += result.written;
    state.lost += result.unwritten;
    if (result.written > 0) {
      state.consecutiveFailures = 0;
      deps.metrics.count('KeysAdded', input.keyType, result.written);
    }
    if (result.unwritten > 0) noteFailure(run, undefined, result.errorCode ?? 'POOL_WRITE_UNPROCESSED');
    const ids = result.writtenKeyIds ?? [];
    // After the write: the event names only keys that exist. A failed append leaves valid keys in the
    // pool without their batch event; it is counted as a failure (AUDIT_WRITE_FAILED), never hidden.
    if (deps.audit && ids.length > 0) {
      await deps.audit
        .append({
          type: 'pool.batch-generated',
          keyType: input.keyType,
          count: ids.length,
          keyIdsHash: hashIds(ids),
        })
        .catch(() => noteFailure(run, undefined, 'AUDIT_WRITE_FAILED'));
    }
  } catch (err) {
    state.lost += batch.length;
    noteFailure(run, err);
  }
}

/** One key: generated extractable, wrapped into the buffer, and its clear object destroyed. */
async function generateOne(run: FillRun): Promise<void> {
  const { deps, input, state } = run;
  let privateKey: PrivateKeyRef | undefined;
  try {
    const pair = await deps.hsm.generateKeyPair(input.keyType, { extractable: true });
    privateKey = pair.privateKey;
    state.generated++;
    const wrappedKey = await deps.hsm.wrapPrivateKey(privateKey, input.wrapKeyLabel);
    const createdAt = run.clock();
    run.buffer.push({
      keyId: run.newKeyId(),
      keyType: input.keyType,
      wrappedKey,
      publicKeySpki: pair.publicKeySpki,
      wrapKeyLabel: input.wrapKeyLabel,
      hsmProfile: input.hsmProfile,
      createdAt,
      expiresAt: keyExpiresAt(createdAt, input.maxAgeSeconds),
    });
    state.consecutiveFailures = 0;
  } catch (err) {
    if (privateKey) state.lost++;
    noteFailure(run, err);
  } finally {
    // The wrapped copy is all the pool needs: the clear key object leaves the HSM now, on every path.
    if (privateKey) await deps.hsm.destroy(privateKey).catch(() => state.destroyFailures++);
  }
}

export async function fillPool(deps: FillPoolDeps, input: FillPoolInput): Promise<FillPoolResult> {
  const clock = deps.clock ?? Date.now;
  const batchSize = input.batchSize ?? 25;
  const started = clock();
  const run: FillRun = {
    deps,
    input,
    clock,
    newKeyId: deps.newKeyId ?? randomUUID,
    maxFailures: input.maxConsecutiveFailures ?? 5,
    state: {
      generated: 0,
      stored: 0,
      lost: 0,
      failures: 0,
      consecutiveFailures: 0,
      destroyFailures: 0,
      stoppedBy: 'done',
    },
    errorCodes: {},
    buffer: [],
  };
  const { state } = run;

  // One task per key, `parallelism` at a time; a task that starts after a stop does nothing.
  const limit = pLimit(Math.max(1, input.parallelism));
  await limit.map(Array.from({ length: input.count }), async () => {
    if (state.stoppedBy !== 'done') return;
    if (clock() >= input.deadline) {
      state.stoppedBy = 'deadline';
      return;
    }
    await generateOne(run);
    if (run.buffer.length >= batchSize) await flush(run);
  });
  await flush(run);
  return {
    requested: input.count,
    generated: state.generated,
    stored: state.stored,
    lost: state.lost,
    failures: state.failures,
    destroyFailures: state.destroyFailures,
    stoppedBy: state.stoppedBy,
    durationMs: clock() - started,
    errorCodes: run.errorCodes,
  };
}
