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
import type { KeyDiscardReason } from './audit';
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
import type { RequestError, SignerIdentity } from './sign-request';
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
  /** Told of every pool key a request discarded (for the audit log). */
  readonly onKeyDiscarded?: (keyId: string, keyType: KeyType, reason: KeyDiscardReason) => void;
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

/** The stage a failure happened in: the default error code when the cause has none of its own. */
type Stage = 'claim' | 'unwrap' | 'keygen' | 'sign' | 'csr' | 'destroy' | 'issue';
const STAGE_CODES: Readonly<Record<Stage, string>> = {
  claim: 'POOL_CLAIM_FAILED',
  unwrap: 'KEY_UNWRAP_FAILED',
  keygen: 'KEYGEN_FAILED',
  sign: 'HSM_SIGN_FAILED',
  csr: 'CSR_FAILED',
  destroy: 'KEY_DESTROY_FAILED',
  issue: 'CERTIFICATE_ISSUE_FAILED',
};

class StageError extends Error {
  public constructor(
    public readonly stage: Stage,
    public readonly causeError: unknown,
  ) {
    super(stage);
  }
}

async function stage<T>(name: Stage, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw new StageError(name, err);
  }
}

/** A stored error: a code and a message made of the stage and the cause's name/code, nothing else. */
export function requestErrorFor(stageName: Stage, cause: unknown): RequestError {
  const causeCode = errorCode(cause);
  const own = (cause as { code?: unknown } | undefined)?.code;
  const code = typeof own === 'string' && causeCode === own ? causeCode : STAGE_CODES[stageName];
  const name = cause instanceof Error ? cause.name : 'error';
  return { code, message: `${stageName} failed: ${name} (${causeCode})` };
}

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
  let key: HsmKeyRef | undefined;
  let pooledKey: boolean | undefined;
  let keyAcquiredAt: number | undefined;
  const destroyKey = async (): Promise<void> => {
    const k = key;
    key = undefined;
    if (k) await hsm.destroy(k);
  };

  const fail = async (error: RequestError, retryAfterSeconds?: number): Promise<SignOutcome> => {
    const stored = await deps.requests.fail(record.id, attemptId, {
      error,
      pooledKey,
      keyAcquiredAt,
      finishedAt: clock(),
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
    for (let discarded = 0; ; discarded++) {
      const mayDiscard = discarded < (settings.maxDiscardedKeys ?? 3);
      const discard = (keyId: string, reason: KeyDiscardReason): void => {
        deps.onKeyDiscarded?.(keyId, record.keyType, reason);
        deps.metrics.count('KeysDiscarded', record.keyType);
      };
      const claimed = await stage('claim', () => deps.pool.claim(record.keyType, Math.floor(clock() / 1000)));
      let publicKeySpki: Buffer;
      if (claimed) {
        pooledKey = true;
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
          key = await hsm.unwrapPrivateKey(claimed.wrappedKey, record.keyType, claimed.wrapKeyLabel);
        } catch (err) {
          if (mayDiscard && isUnwrapRejection(err)) {
            discard(claimed.keyId, 'unwrap-failed');
            continue;
          }
          throw new StageError('unwrap', err);
        }
        publicKeySpki = claimed.publicKeySpki;
      } else if (settings.emptyPoolPolicy === 'reject') {
        deps.metrics.count('PoolEmptyRejections', record.keyType);
        const message = `no pre-generated ${record.keyType} key available; retry after ${settings.retryAfterSeconds} s`;
        return await fail({ code: 'POOL_EMPTY', message }, settings.retryAfterSeconds);
      } else {
        pooledKey = false;
        deps.metrics.count('OnTheFlyFallbacks', record.keyType);
        // Used in place and never stored: generated non-extractable.
        const pair = await stage('keygen', () => hsm.generateKeyPair(record.keyType, { extractable: false }));
        key = pair.privateKey;
        publicKeySpki = pair.publicKeySpki;
      }
      keyAcquiredAt = clock();
      const signingKey = key;

      signature = await stage('sign', () =>
        hsm.signDigest(signingKey, Buffer.from(record.digest, 'base64'), signOptions),
      );
      signedAt = clock();
      csrDer = await stage('csr', () =>
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
        await stage('destroy', destroyKey);
        if (mayDiscard) {
          discard(claimed.keyId, 'public-key-mismatch');
          continue;
        }
        return await fail({
          code: 'KEY_PUBLIC_MISMATCH',
          message: `pool key ${claimed.keyId} does not match its stored public key`,
        });
      }
      break;
    }
    await stage('destroy', destroyKey);
    const csrAt = clock();

    // 3. The certificate: the issuer takes the subject from the request record, not from the CSR.
    const issued = await stage('issue', () => deps.issuer.issue({ requestId: record.id, csrDer }));
    const finishedAt = clock();
    result = {
      signature: signature.toString('base64'),
      certificate: issued.certificatePem,
      chain: issued.chainPem,
      pooledKey,
      keyAcquiredAt,
      finishedAt,
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
