/**
 * The signing core: one sign request from its stored record to a terminal state, as pure orchestration
 * over ports (request store, key pool, HSM, CSR builder, certificate issuer, metrics).
 *
 *   claim a pool key (or generate on the fly / reject, per policy) -> unwrap in the HSM -> sign the digest
 *   -> CSR for the signer signed by the same key (proof of possession) -> destroy the HSM object
 *   -> certificate from the issuer -> record `signed` (or `failed` with a code, on any error)
 *
 * The HSM object is destroyed on every path, as soon as the CSR is signed (the issuer does not need it).
 */
import { randomUUID } from 'node:crypto';
import type { DigestAlgorithm, KeyType, SignatureAlgorithm } from './algorithms';
import { signatureMadeEvent, type AuditEvent, type AuditSink, type KeyDiscardReason } from './audit';
import type { CertificateIssuer } from './certificate-issuer';
import { errorCode } from './fill-pool';
import type { EmptyPoolPolicy, HsmKeyRef, HsmSignOptions, KeyPoolStore, PoolHsm } from './pool';
import type { PoolMetrics } from './pool-metrics';
import {
  decideDelivery,
  type SignRequestStore,
  type SignedResult,
  type StoredSignRequest,
} from './request-state';
import { DEFAULT_RETRY_POLICY, retryTransient, type RetryPolicy } from './retry';
import type { RequestError, SignerIdentity, SigningStage } from './sign-request';
import { AttemptSupersededError, RequestInProgressError, RequestNotFoundError } from './signing-errors';

/** Builds a PKCS#10 CSR (DER) for the subject, signed through `sign` (implemented by lambdas/pki). */
export type CsrBuilder = (input: {
  readonly subject: SignerIdentity;
  readonly keyType: KeyType;
  readonly publicKeySpki: Buffer;
  readonly sign: (
    digest: Buffer,
    options: { digestAlgorithm: DigestAlgorithm; signatureAlgorithm: SignatureAlgorithm },
  ) => Promise<Buffer>;
}) => Promise<Buffer>;

export interface SigningSettings {
  readonly emptyPoolPolicy: EmptyPoolPolicy;
  readonly retryAfterSeconds: number;
  /** How long an attempt owns a request in `signing` before a redelivery may take it over. */
  readonly leaseMs: number;
  /** The profile of this HSM: a pool key wrapped under another profile cannot be unwrapped here. */
  readonly hsmProfile: string;
  /** Pool keys a request may discard (unusable) before it fails; default 3. */
  readonly maxDiscardedKeys?: number;
}

export interface SigningDeps {
  readonly requests: SignRequestStore;
  readonly pool: Pick<KeyPoolStore, 'claim'>;
  readonly hsm: PoolHsm;
  readonly buildCsr: CsrBuilder;
  readonly issuer: CertificateIssuer;
  readonly metrics: PoolMetrics;
  readonly settings: SigningSettings;
  /** Verifies a CSR's signature against its own public key; throws when it does not verify. */
  readonly verifyCsr?: (csrDer: Buffer) => unknown;
  /** Told of every pool key a request discarded (the audit log records them too). */
  readonly onKeyDiscarded?: (keyId: string, keyType: KeyType, reason: KeyDiscardReason) => void;
  /**
   * The tamper-evident log: each attempt appends what it did to pool keys (claimed, discarded,
   * destroyed) and the signature it made, before its result is stored.
   */
  readonly audit?: AuditSink;
  /** Retries of transient HSM and CA failures; default DEFAULT_RETRY_POLICY. */
  readonly retry?: RetryPolicy;
  /** Told of each transient failure that is retried (for logs). */
  readonly onRetry?: (stage: SigningStage, err: unknown, attempt: number) => void;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Epoch ms. */
  readonly clock?: () => number;
  readonly newAttemptId?: () => string;
}

/** The HSM rejected a wrapped blob (corrupted or wrapped under another key): the key is unusable. */
function isUnwrapRejection(err: unknown): boolean {
  return (err as { name?: unknown } | undefined)?.name === 'HsmUnwrapError';
}

function csrVerifies(verify: (csrDer: Buffer) => unknown, csrDer: Buffer): boolean {
  try {
    verify(csrDer);
    return true;
  } catch {
    return false;
  }
}

/** Millisecond durations of the stages of this attempt (absent on a replay). */
export interface StageTimings {
  readonly acquireKeyMs: number;
  readonly signMs: number;
  readonly csrMs: number;
  readonly issueMs: number;
  readonly totalMs: number;
}

export type SignOutcome =
  | {
      readonly status: 'signed';
      readonly record: StoredSignRequest;
      /** True when the stored result of an earlier delivery was returned. */
      readonly replayed: boolean;
      readonly stages?: StageTimings;
    }
  | {
      readonly status: 'failed';
      readonly record: StoredSignRequest;
      readonly replayed: boolean;
      /** Set when the pool was empty under the `reject` policy. */
      readonly retryAfterSeconds?: number;
    };

/**
 * Processes one delivery of a sign request. Returns the terminal outcome (fresh or replayed); throws
 * RequestInProgressError when another attempt holds the request (retry later), RequestNotFoundError for
 * an unknown id, AttemptSupersededError when this attempt lost ownership, and store errors as they come
 * (the request then stays `signing` and a redelivery takes it over after the lease).
 */
export async function processSignRequest(deps: SigningDeps, requestId: string): Promise<SignOutcome> {
  const clock = deps.clock ?? Date.now;
  const newAttemptId = deps.newAttemptId ?? randomUUID;
  const start = (takeOverFrom?: { attemptId: string | undefined }) => {
    const now = clock();
    const attemptId = newAttemptId();
    return deps.requests
      .startAttempt(requestId, {
        attemptId,
        startedAt: now,
        leaseUntil: now + deps.settings.leaseMs,
        takeOverFrom,
      })
      .then((started) => (started ? { started, attemptId } : undefined));
  };
  // The common case first: a fresh request, started in one conditional write without a read.
  const fresh = await start();
  if (fresh) return runAttempt(deps, fresh.started, fresh.attemptId, clock);
  for (let round = 0; round < 2; round++) {
    const record = await deps.requests.get(requestId);
    if (!record) throw new RequestNotFoundError(requestId);
    const decision = decideDelivery(record, clock());
    if (decision.kind === 'replay') return replay(record);
    if (decision.kind === 'busy') throw new RequestInProgressError(requestId, decision.retryAfterMs);
    const attempt = await start(
      decision.kind === 'takeover' ? { attemptId: decision.staleAttemptId } : undefined,
    );
    // Lost the race to another delivery: look once more (it may have finished already).
    if (attempt) return runAttempt(deps, attempt.started, attempt.attemptId, clock);
  }
  throw new RequestInProgressError(requestId, deps.settings.leaseMs);
}

function replay(record: StoredSignRequest): SignOutcome {
  return record.status === 'signed'
    ? { status: 'signed', record, replayed: true }
    : { status: 'failed', record, replayed: true };
}

/** The default error code of each stage, used when the cause has no code of its own. */
const STAGE_CODES: Readonly<Record<SigningStage, string>> = {
  claim: 'POOL_CLAIM_FAILED',
  unwrap: 'KEY_UNWRAP_FAILED',
  keygen: 'KEYGEN_FAILED',
  sign: 'HSM_SIGN_FAILED',
  csr: 'CSR_FAILED',
  destroy: 'KEY_DESTROY_FAILED',
  issue: 'CERTIFICATE_ISSUE_FAILED',
  audit: 'AUDIT_WRITE_FAILED',
};

class StageError extends Error {
  public constructor(
    public readonly stage: SigningStage,
    public readonly causeError: unknown,
  ) {
    super(stage);
  }
}

/** A stored error: a code and a message made of the stage and the cause's name/code, nothing else. */
export function requestErrorFor(stageName: SigningStage, cause: unknown): RequestError {
  const causeCode = errorCode(cause);
  const own = (cause as { code?: unknown } | undefined)?.code;
  const code = typeof own === 'string' && causeCode === own ? causeCode : STAGE_CODES[stageName];
  const name = cause instanceof Error ? cause.name : 'error';
  return { code, message: `${stageName} failed: ${name} (${causeCode})` };
}

/** Stages safe to repeat after a transient failure (see retry.ts); claim and audit retry on their own. */
const RETRIED: ReadonlySet<SigningStage> = new Set(['unwrap', 'keygen', 'sign', 'csr', 'destroy', 'issue']);

async function runAttempt(
  deps: SigningDeps,
  record: StoredSignRequest,
  attemptId: string,
  clock: () => number,
): Promise<SignOutcome> {
  const { hsm, settings } = deps;
  const startedAt = clock();
  const signOptions: HsmSignOptions = {
    digestAlgorithm: record.digestAlgorithm,
    signatureAlgorithm: record.signatureAlgorithm,
  };
  const durations: Partial<Record<SigningStage, number>> = {};
  /** Runs one stage: timed, retried when safe, and any failure tagged with the stage. */
  const timed = async <T>(name: SigningStage, fn: () => Promise<T>): Promise<T> => {
    const t0 = clock();
    try {
      if (!RETRIED.has(name)) return await fn();
      return await retryTransient(fn, deps.retry ?? DEFAULT_RETRY_POLICY, {
        sleep: deps.sleep,
        onRetry: (err, attempt) => deps.onRetry?.(name, err, attempt),
      });
    } catch (err) {
      throw new StageError(name, err);
    } finally {
      durations[name] = (durations[name] ?? 0) + clock() - t0;
    }
  };

  // Audit events of this attempt not yet appended (ids and hashes only).
  const events: AuditEvent[] = [];
  const appendEvents = async (): Promise<void> => {
    const batch = events.splice(0);
    if (batch.length > 0 && deps.audit) await deps.audit.appendMany(batch);
  };

  let key: HsmKeyRef | undefined;
  let keyId: string | undefined;
  let pooledKey: boolean | undefined;
  let keyAcquiredAt: number | undefined;
  let discardedKeys = 0;
  // Forgets the key only once the HSM confirmed the destroy, so a retry (or the safety net) tries again.
  const destroyKey = async (): Promise<void> => {
    const k = key;
    if (!k) return;
    await hsm.destroy(k);
    key = undefined;
    if (keyId) events.push({ type: 'pool.key-destroyed', keyId, requestId: record.id });
  };

  const fail = async (error: RequestError, retryAfterSeconds?: number): Promise<SignOutcome> => {
    // Best effort: what this attempt did to pool keys is recorded even when it fails.
    await timed('audit', appendEvents).catch(() => undefined);
    const stored = await deps.requests.fail(record.id, attemptId, {
      error,
      pooledKey,
      keyAcquiredAt,
      finishedAt: clock(),
      stageMs: durations,
      discardedKeys,
    });
    if (!stored) throw new AttemptSupersededError(record.id);
    return { status: 'failed', record: stored, replayed: false, retryAfterSeconds };
  };

  let result: SignedResult;
  let stages: StageTimings;
  try {
    // 1-2. A key (claimed from the pool, deleted in the same step; or generated; or none: reject), the
    // document signature, then the proof of possession with the same key. A pooled key that cannot serve
    // (wrapped under another profile, rejected by unwrap, or stored with a public key that is not its
    // own) is discarded - it is already out of the pool - and the request carries on with the next one.
    let signature: Buffer;
    let csrDer: Buffer;
    let signedAt: number;
    for (;;) {
      const mayDiscard = discardedKeys < (settings.maxDiscardedKeys ?? 3);
      const discard = (id: string, reason: KeyDiscardReason): void => {
        discardedKeys++;
        events.push({ type: 'pool.key-discarded', keyId: id, reason, requestId: record.id });
        deps.onKeyDiscarded?.(id, record.keyType, reason);
        deps.metrics.count('KeysDiscarded', record.keyType);
      };
      const claimed = await timed('claim', () => deps.pool.claim(record.keyType, Math.floor(clock() / 1000)));
      let publicKeySpki: Buffer;
      if (claimed) {
        pooledKey = true;
        keyId = claimed.keyId;
        events.push({ type: 'pool.key-claimed', keyId: claimed.keyId, requestId: record.id });
        deps.metrics.count('KeysClaimed', record.keyType);
        if (claimed.hsmProfile !== settings.hsmProfile) {
          if (mayDiscard) {
            discard(claimed.keyId, 'profile-mismatch');
            continue;
          }
          return await fail({
            code: 'KEY_PROFILE_MISMATCH',
            message: `pool key ${claimed.keyId} was wrapped under profile ${claimed.hsmProfile}`,
          });
        }
        try {
          key = await timed('unwrap', () =>
            hsm.unwrapPrivateKey(claimed.wrappedKey, record.keyType, claimed.wrapKeyLabel),
          );
        } catch (err) {
          if (!(err instanceof StageError && isUnwrapRejection(err.causeError))) throw err;
          if (mayDiscard) {
            discard(claimed.keyId, 'unwrap-failed');
            continue;
          }
          // Named like the other unusable-key endings, not by the HSM's generic CKR code.
          return await fail({
            code: 'KEY_UNWRAP_FAILED',
            message: `pool key ${claimed.keyId} could not be unwrapped, after ${discardedKeys} unusable keys`,
          });
        }
        publicKeySpki = claimed.publicKeySpki;
      } else if (settings.emptyPoolPolicy === 'reject') {
        deps.metrics.count('PoolEmptyRejections', record.keyType);
        const message = `no pre-generated ${record.keyType} key available; retry after ${settings.retryAfterSeconds} s`;
        return await fail({ code: 'POOL_EMPTY', message }, settings.retryAfterSeconds);
      } else {
        pooledKey = false;
        keyId = undefined;
        deps.metrics.count('OnTheFlyFallbacks', record.keyType);
        // Used in place and never stored: generated non-extractable.
        const pair = await timed('keygen', () => hsm.generateKeyPair(record.keyType, { extractable: false }));
        key = pair.privateKey;
        publicKeySpki = pair.publicKeySpki;
      }
      keyAcquiredAt = clock();
      const signingKey = key;

      signature = await timed('sign', () =>
        hsm.signDigest(signingKey, Buffer.from(record.digest, 'base64'), signOptions),
      );
      signedAt = clock();
      csrDer = await timed('csr', () =>
        deps.buildCsr({
          subject: record.signer,
          keyType: record.keyType,
          publicKeySpki,
          sign: (digest, options) => hsm.signDigest(signingKey, digest, options),
        }),
      );
      // The CA's own proof-of-possession check, done here first: a stored public key that is not the
      // private key's would fail it there and end the request; here it only costs that key.
      if (claimed && deps.verifyCsr && !csrVerifies(deps.verifyCsr, csrDer)) {
        await timed('destroy', destroyKey);
        if (mayDiscard) {
          discard(claimed.keyId, 'public-key-mismatch');
          continue;
        }
        return await fail({
          code: 'KEY_PUBLIC_MISMATCH',
          message: `pool key ${claimed.keyId} does not match its stored public key`,
        });
      }
      events.push(signatureMadeEvent({ requestId: record.id, signature, publicKeySpki, keyId }));
      break;
    }
    await timed('destroy', destroyKey);
    const csrAt = clock();

    // 3. The certificate (the issuer takes the subject from the request record, not from the CSR), while
    // this attempt's audit events are appended: both must succeed before the result is released.
    const [issued] = await Promise.all([
      timed('issue', () => deps.issuer.issue({ requestId: record.id, csrDer, attemptId })),
      timed('audit', appendEvents),
    ]);
    const finishedAt = clock();
    result = {
      signature: signature.toString('base64'),
      certificate: issued.certificatePem,
      chain: issued.chainPem,
      pooledKey,
      keyAcquiredAt,
      finishedAt,
      stageMs: durations,
      discardedKeys,
    };
    stages = {
      acquireKeyMs: keyAcquiredAt - startedAt,
      signMs: signedAt - keyAcquiredAt,
      csrMs: csrAt - signedAt,
      issueMs: finishedAt - csrAt,
      totalMs: finishedAt - startedAt,
    };
  } catch (err) {
    await destroyKey().catch(() => undefined);
    if (!(err instanceof StageError)) throw err;
    return fail(requestErrorFor(err.stage, err.causeError));
  } finally {
    // Safety net for the early returns above (profile mismatch): nothing stays in the HSM.
    await destroyKey().catch(() => undefined);
  }

  const stored = await deps.requests.complete(record.id, attemptId, result);
  if (!stored) throw new AttemptSupersededError(record.id);
  return { status: 'signed', record: stored, replayed: false, stages };
}
