/**
 * The signing core: one sign request from its stored record to a terminal state, as pure orchestration
 * over ports (request store, key pool, HSM, CSR builder, certificate issuer, container builder, metrics).
 *
 *   a certified key: from the key source (pool/key-source.ts: a claimed pool key, or one generated on the
 *     fly, or none and POOL_EMPTY, per policy) -> unwrap in the HSM
 *     -> CSR for the signer signed by that key (proof of possession; a pool key that fails it is
 *     discarded) -> certificate from the issuer, which verifies the request's identity assertion itself
 *     (a key the CA already certified once is discarded like any unusable pool key)
 *   raw: sign the client's digest; cms: signed attributes naming the certificate, signed
 *   -> destroy the key -> (cms: container) -> audit events -> record `signed` (or `failed` with a code)
 *
 * Nothing is signed with a key before the CA certified it, so a key the CA refuses has signed nothing.
 * The HSM object is destroyed on every path.
 */
import { randomUUID } from 'node:crypto';
import type { DigestAlgorithm, KeyType, SignatureAlgorithm } from '../shared/algorithms';
import {
  signatureMadeEvent,
  type AuditEvent,
  type AuditReceipt,
  type AuditSink,
  type KeyDiscardReason,
} from '../audit';
import type { CertificateIssuer, IssuedCertificate } from '../pki/certificate-issuer';
import { canonicalPublicKey, type CanonicalPublicKey } from '../pki/public-key';
import type { FallbackLimiter, ReleaseSlot } from '../pool/fallback-limiter';
import { keySourceFor, type KeySource } from '../pool/key-source';
import { requestBindingOf } from '../identity/binding';
import type { EmptyPoolPolicy, KeyPoolStore, PoolHsm, PoolKey } from '../pool/pool';
import type { PoolMetrics } from '../pool/pool-metrics';
import {
  decideDelivery,
  type SignRequestStore,
  type SignedResult,
  type StoredSignRequest,
} from './request-state';
import { DEFAULT_RETRY_POLICY, retryTransient, type RetryPolicy } from '../shared/retry';
import type { SignDocument } from './documents';
import type {
  ContainerBuilder,
  PreparedContainer,
  TimeStamper,
  ValidationData,
  ValidationDataSource,
} from './signature-container';
import {
  levelAtLeast,
  type DocumentResult,
  type RequestError,
  type SignatureLevel,
  type SigningStage,
} from './sign-request';
import type { SignerIdentity } from '../identity/types';
import {
  AttemptSupersededError,
  KeyUnavailableError,
  RequestInProgressError,
  RequestNotFoundError,
} from './signing-errors';
import { HsmUnwrapError, type PrivateKeyRef } from '../shared/hsm';
import { CLIENT_CODES, type FailureCode } from '../shared/client-codes';
import { errorCode, PipelineError } from '../shared/errors';

/** Builds a PKCS#10 CSR (DER) for the subject, signed through `sign` (implemented by lambdas/der). */
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
  /**
   * Pool keys a request may discard because the CA certified them before (copies of used keys: a restored
   * bundle holds up to a bundle's worth), counted apart; default 25.
   */
  readonly maxReplayedKeys?: number;
}

export interface SigningDeps {
  readonly requests: SignRequestStore;
  readonly pool: Pick<KeyPoolStore, 'claim'>;
  readonly hsm: PoolHsm;
  readonly buildCsr: CsrBuilder;
  readonly issuer: CertificateIssuer;
  /** Builds `cms` results; a request for a container fails CONTAINER_UNSUPPORTED without one. */
  readonly buildContainer?: ContainerBuilder;
  /** B-T and up: the TSA; without one, such a request ends at its minimum level or TSA_UNAVAILABLE. */
  readonly timeStamper?: TimeStamper;
  /** B-LT and up: the validation data; without it, B-T or VALIDATION_DATA_UNAVAILABLE. */
  readonly validationData?: ValidationDataSource;
  readonly metrics: PoolMetrics;
  readonly settings: SigningSettings;
  /**
   * The proof-of-possession check of the CSR this attempt built from `publicKeySpki` (the pool record's
   * public key): throws when the CSR's signature does not verify with that key (lambdas/der's
   * verifyOwnCsr, one verify of the info the signer encoded itself).
   */
  readonly verifyCsr?: (csrDer: Buffer, publicKeySpki: Buffer) => unknown;
  /**
   * A stored public key in its canonical encoding (a pool key stored in any other is discarded);
   * default canonicalPublicKey. Injectable for tests whose keys are not real keys.
   */
  readonly canonicalKey?: (spki: Buffer) => CanonicalPublicKey | undefined;
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
  /** Told when a result stays below the level asked for (within the request's minimum level). */
  readonly onLevelLowered?: (reached: SignatureLevel, code: string, err: unknown) => void;
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Bounds on-the-fly generation under the `fallback` policy (per process, per key type); without it
   * every request that finds the pool empty generates at once.
   */
  readonly fallbackLimiter?: FallbackLimiter;
  /**
   * Where keys come from; default keySourceFor(pool, settings.emptyPoolPolicy, fallbackLimiter): the pool,
   * then on the fly or refuse.
   */
  readonly keySource?: KeySource;
  /** Epoch ms. */
  readonly clock?: () => number;
  readonly newAttemptId?: () => string;
}

/** The HSM rejected a wrapped blob (corrupted or wrapped under another key): the key is unusable. */
function isUnwrapRejection(err: unknown): boolean {
  return err instanceof HsmUnwrapError;
}

function csrVerifies(
  verify: (csrDer: Buffer, publicKeySpki: Buffer) => unknown,
  csrDer: Buffer,
  publicKeySpki: Buffer,
): boolean {
  try {
    verify(csrDer, publicKeySpki);
    return true;
  } catch {
    return false;
  }
}

/** Millisecond durations of the stages of this attempt (absent on a replay). */
export interface StageTimings {
  /** Claim + unwrap, or on-the-fly generation (discarded keys included). */
  readonly acquireKeyMs: number;
  /** The one-time key's signature (over the digest, or over the container's attributes). */
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
      /** Set when the pool was empty under the `reject` policy, or no on-the-fly generation was free. */
      readonly retryAfterSeconds?: number;
    };

/** How this delivery stands among the queue's deliveries of the message. */
export interface ProcessOptions {
  /**
   * The queue will not deliver the message again: a request that finds no key ends POOL_EMPTY instead of
   * handing its message back (KeyUnavailableError).
   */
  readonly lastDelivery?: boolean;
  /** On the last delivery: how long the request may wait for an on-the-fly generation (ms). */
  readonly lastChanceWaitMs?: number;
}

/**
 * Processes one delivery of a sign request. Returns the terminal outcome (fresh or replayed); throws
 * RequestInProgressError when another attempt holds the request (retry later), KeyUnavailableError when
 * no key could be had yet under `fallback` (the lease is given up: retry later), RequestNotFoundError for
 * an unknown id, AttemptSupersededError when this attempt lost ownership, and store errors as they come
 * (the request then stays `signing` and a redelivery takes it over after the lease).
 */
export async function processSignRequest(
  deps: SigningDeps,
  requestId: string,
  options: ProcessOptions = {},
): Promise<SignOutcome> {
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
  if (fresh) return runAttempt(deps, fresh.started, fresh.attemptId, clock, options);
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
    if (attempt) return runAttempt(deps, attempt.started, attempt.attemptId, clock, options);
  }
  throw new RequestInProgressError(requestId, deps.settings.leaseMs);
}

function replay(record: StoredSignRequest): SignOutcome {
  return record.status === 'signed'
    ? { status: 'signed', record, replayed: true }
    : { status: 'failed', record, replayed: true };
}

/** The default error code of each stage, used when the cause has no code of its own. */
const STAGE_CODES: Readonly<Record<SigningStage, FailureCode>> = {
  claim: 'POOL_CLAIM_FAILED',
  unwrap: 'KEY_UNWRAP_FAILED',
  keygen: 'KEYGEN_FAILED',
  sign: 'HSM_SIGN_FAILED',
  csr: 'CSR_FAILED',
  destroy: 'KEY_DESTROY_FAILED',
  issue: 'CERTIFICATE_ISSUE_FAILED',
  container: 'CONTAINER_FAILED',
  timestamp: 'TSA_UNAVAILABLE',
  validation: 'VALIDATION_DATA_UNAVAILABLE',
  audit: 'AUDIT_WRITE_FAILED',
};

/** A stage failed: the stage, with the failure as its cause. Never leaves the attempt. */
class StageError extends PipelineError {
  public override name = 'StageError';
  public constructor(
    public readonly stage: SigningStage,
    cause: unknown,
  ) {
    super(`${stage} failed`, STAGE_CODES[stage], { cause });
  }
}

/** A request that ends without a signature for a reason of its own (not a stage failure). */
class AttemptEnded extends PipelineError {
  public override name = 'AttemptEnded';
  public constructor(
    public readonly error: RequestError & { readonly code: FailureCode },
    public readonly retryAfterSeconds?: number,
  ) {
    super(error.message, error.code);
  }
}

/**
 * A code a failed request may carry from its cause: one of the registry's (a CA refusal, an assertion
 * code) or a PKCS#11 `CKR_*` name; any other internal code stays in the message, behind the stage's code.
 */
function clientVisible(code: string): boolean {
  return Object.hasOwn(CLIENT_CODES, code) || /^CKR_[A-Z0-9_]+$/.test(code);
}

/** A stored error: a code and a message made of the stage and the cause's name/code, nothing else. */
export function requestErrorFor(stageName: SigningStage, cause: unknown): RequestError {
  const causeCode = errorCode(cause);
  const own = (cause as { code?: unknown } | undefined)?.code;
  const code =
    typeof own === 'string' && causeCode === own && clientVisible(own) ? causeCode : STAGE_CODES[stageName];
  const name = cause instanceof Error ? cause.name : 'error';
  return { code, message: `${stageName} failed: ${name} (${causeCode})` };
}

/** Stages safe to repeat after a transient failure (see shared/retry.ts); claim and audit retry on their own. */
const RETRIED: ReadonlySet<SigningStage> = new Set(['unwrap', 'keygen', 'sign', 'csr', 'destroy', 'issue']);

/** A key that passed the proof of possession: what the certificate will be issued for. */
interface UsableKey {
  readonly publicKeySpki: Buffer;
  readonly csrDer: Buffer;
}

/** A usable key and the certificate the CA issued for it. */
interface CertifiedKey extends UsableKey {
  readonly issued: IssuedCertificate;
}

/** The CA's refusal of a public key it certified before (see the CA's register of public keys). */
export const KEY_ALREADY_CERTIFIED = 'PUBLIC_KEY_ALREADY_CERTIFIED';

function isAlreadyCertified(err: unknown): boolean {
  return (err as { code?: unknown } | undefined)?.code === KEY_ALREADY_CERTIFIED;
}

/** What a finished signature yields for the record. */
interface Signed {
  readonly result: Pick<
    SignedResult,
    | 'signature'
    | 'cms'
    | 'certificate'
    | 'certificateSerial'
    | 'chain'
    | 'reachedLevel'
    | 'validationData'
    | 'documentResults'
    | 'resultsExpireAt'
  >;
  /** When the one-time key's signature was made. */
  readonly signedAt: number;
}

/** One document's signature, and for a container the container waiting for it. */
interface MadeSignature {
  readonly signature: Buffer;
  readonly prepared?: PreparedContainer;
}

/** A container document's wanted and minimum levels (undefined for a raw signature). */
interface DocumentLevels {
  readonly wanted: SignatureLevel | undefined;
  readonly minimum: SignatureLevel | undefined;
}

function runAttempt(
  deps: SigningDeps,
  record: StoredSignRequest,
  attemptId: string,
  clock: () => number,
  options: ProcessOptions,
): Promise<SignOutcome> {
  return new SigningAttempt(deps, record, attemptId, clock, options).run();
}

/** Under `fallback`, no key yet: the attempt hands the request back instead of failing it. */
class NoKeyYet extends PipelineError {
  public override name = 'NoKeyYet';
  public constructor() {
    super('no key yet', 'KEY_UNAVAILABLE');
  }
}

/**
 * One attempt at one request: it owns the request (attemptId), at most one HSM key object at a time, and
 * the audit events of what it did. Each stage is timed, retried when safe, and tagged for its error code.
 */
class SigningAttempt {
  private readonly durations: Partial<Record<SigningStage, number>> = {};
  /** Audit events not yet appended (ids and hashes only). */
  private readonly events: AuditEvent[] = [];
  private key: PrivateKeyRef | undefined;
  private keyId: string | undefined;
  private pooledKey: boolean | undefined;
  private keyAcquiredAt: number | undefined;
  private discardedKeys = 0;
  private replayedKeys = 0;
  /** Where the signature's event landed in the audit log (returned with the result). */
  private receipt: AuditReceipt | undefined;
  private readonly startedAt: number;
  /** Where the keys come from: the pool, then on the fly or refuse, as the policy says. */
  private readonly keySource: KeySource;

  public constructor(
    private readonly deps: SigningDeps,
    private readonly record: StoredSignRequest,
    private readonly attemptId: string,
    private readonly clock: () => number,
    private readonly options: ProcessOptions = {},
  ) {
    this.startedAt = clock();
    this.keySource =
      deps.keySource ??
      keySourceFor({
        pool: deps.pool,
        policy: deps.settings.emptyPoolPolicy,
        limiter: deps.fallbackLimiter,
        clock,
      });
  }

  public async run(): Promise<SignOutcome> {
    let signed: Signed;
    try {
      if (!this.record.identityAssertion) {
        // Nothing the CA could verify (a record the API did not write): no key is spent on it, and the
        // refusal is in the audit log.
        this.events.push({
          type: 'request.refused',
          requestId: this.record.id,
          code: 'IDENTITY_EVIDENCE_MISSING',
        });
        throw new AttemptEnded({
          code: 'IDENTITY_EVIDENCE_MISSING',
          message: 'the request carries no identity assertion for the CA to verify',
        });
      }
      if (this.record.documents) {
        if (this.record.documents.some((d) => d.format === 'cms') && !this.deps.buildContainer) {
          throw new AttemptEnded({
            code: 'CONTAINER_UNSUPPORTED',
            message: 'this signer builds no containers',
          });
        }
        const certified = await this.acquireCertifiedKey();
        signed = await this.signDocuments(certified, this.record.documents);
      } else {
        signed = await this.signOne();
      }
    } catch (err) {
      await this.destroyKey().catch(() => undefined);
      if (err instanceof NoKeyYet) return this.handBack();
      if (err instanceof AttemptEnded) return this.fail(err.error, err.retryAfterSeconds);
      if (err instanceof StageError) return this.fail(requestErrorFor(err.stage, err.cause));
      throw err;
    } finally {
      // Safety net: nothing this attempt made stays in the HSM, whatever ended it.
      await this.destroyKey().catch(() => undefined);
    }
    return this.complete(signed);
  }

  /** A single document request: its key, then its raw signature or its container. */
  private async signOne(): Promise<Signed> {
    const cms = (this.record.format ?? 'raw') === 'cms';
    if (cms && (!this.deps.buildContainer || !this.record.profile)) {
      throw new AttemptEnded({
        code: 'CONTAINER_UNSUPPORTED',
        message: 'this signer builds no containers',
      });
    }
    const certified = await this.acquireCertifiedKey();
    return cms ? this.signContainer(certified) : this.signRaw(certified);
  }

  /** Runs one stage: timed, retried when safe, and any failure tagged with the stage. */
  private async stage<T>(name: SigningStage, fn: () => Promise<T>): Promise<T> {
    const t0 = this.clock();
    try {
      if (!RETRIED.has(name)) return await fn();
      return await retryTransient(fn, this.deps.retry ?? DEFAULT_RETRY_POLICY, {
        sleep: this.deps.sleep,
        onRetry: (err, attempt) => this.deps.onRetry?.(name, err, attempt),
      });
    } catch (err) {
      throw new StageError(name, err);
    } finally {
      this.durations[name] = (this.durations[name] ?? 0) + this.clock() - t0;
    }
  }

  /**
   * A key (claimed from the pool, deleted in the same step; or generated; or none: reject), the proof of
   * possession it signs, and its certificate. A pooled key that cannot serve (wrapped under another
   * profile, its public key stored in another than its canonical encoding, rejected by unwrap, stored
   * with a public key that is not its own, or certified before: a restored copy) is discarded - it is already out of the pool - and the request carries on with the
   * next one, up to maxDiscardedKeys.
   */
  private async acquireCertifiedKey(): Promise<CertifiedKey> {
    const { deps, record } = this;
    for (;;) {
      const mayDiscard = this.discardedKeys < (deps.settings.maxDiscardedKeys ?? 3);
      // The claim, and under `fallback` the wait for a generation slot (or a key keygen stored
      // meanwhile), count as claim time.
      const lastChance = this.options.lastDelivery ? this.options.lastChanceWaitMs : undefined;
      const sourced = await this.stage('claim', () =>
        this.keySource.next(record.keyType, record.clientId, lastChance),
      );
      if (sourced.kind === 'refused') this.poolEmpty(sourced.reason);
      const claimed = sourced.kind === 'pooled' ? sourced.key : undefined;
      const publicKeySpki = claimed
        ? await this.unwrapPooledKey(claimed, mayDiscard)
        : await this.generateKey(sourced.kind === 'generate' ? sourced.release : undefined);
      // Discarded: on to the next key.
      if (!publicKeySpki) continue;
      this.keyAcquiredAt = this.clock();
      const certified = await this.certify(publicKeySpki, claimed, mayDiscard);
      if (certified) return certified;
    }
  }

  /**
   * A claimed pool key, unwrapped into the HSM: its public key, or undefined when the key cannot serve
   * (another profile, a non-canonical public key, refused by unwrap) and was discarded.
   */
  private async unwrapPooledKey(claimed: PoolKey, mayDiscard: boolean): Promise<Buffer | undefined> {
    const { deps, record } = this;
    this.pooledKey = true;
    this.keyId = claimed.keyId;
    this.events.push({ type: 'pool.key-claimed', keyId: claimed.keyId, requestId: record.id });
    deps.metrics.count('KeysClaimed', record.keyType);
    if (claimed.hsmProfile !== deps.settings.hsmProfile) {
      if (mayDiscard) {
        this.discard(claimed.keyId, 'profile-mismatch');
        return undefined;
      }
      throw new AttemptEnded({
        code: 'KEY_PROFILE_MISMATCH',
        message: `pool key ${claimed.keyId} was wrapped under profile ${claimed.hsmProfile}`,
      });
    }
    // The stored public key must be in its one canonical encoding: another encoding of a key hashes
    // as a new key. A re-encoded row is a copy put back by someone who can write the table (keygen
    // writes canonical keys only); it is discarded, counted with the copies the CA refuses, before
    // the HSM does any work for it.
    const stored = (deps.canonicalKey ?? canonicalPublicKey)(claimed.publicKeySpki);
    if (!stored?.canonical) {
      if (this.replayedKeys < (deps.settings.maxReplayedKeys ?? 25)) {
        this.replayedKeys++;
        this.discard(claimed.keyId, 'public-key-not-canonical', stored?.hash);
        return undefined;
      }
      throw new AttemptEnded({
        code: 'PUBLIC_KEY_NOT_CANONICAL',
        message: `pool key ${claimed.keyId} is stored in a non-canonical encoding, after ${this.replayedKeys} copies`,
      });
    }
    try {
      this.key = await this.stage('unwrap', () =>
        deps.hsm.unwrapPrivateKey(claimed.wrappedKey, record.keyType, claimed.wrapKeyLabel),
      );
    } catch (err) {
      if (!(err instanceof StageError && isUnwrapRejection(err.cause))) throw err;
      if (mayDiscard) {
        this.discard(claimed.keyId, 'unwrap-failed');
        return undefined;
      }
      // Named like the other unusable-key endings, not by the HSM's generic CKR code.
      throw new AttemptEnded({
        code: 'KEY_UNWRAP_FAILED',
        message: `pool key ${claimed.keyId} could not be unwrapped, after ${this.discardedKeys} unusable keys`,
      });
    }
    return claimed.publicKeySpki;
  }

  /** A key generated on the fly (no pool key): its public key; the generation slot, if any, freed after. */
  private async generateKey(release: ReleaseSlot | undefined): Promise<Buffer> {
    const { deps, record } = this;
    this.pooledKey = false;
    this.keyId = undefined;
    deps.metrics.count('OnTheFlyFallbacks', record.keyType);
    // Used in place and never stored: generated non-extractable. The slot is freed once the HSM is done.
    const pair = await this.stage('keygen', () =>
      deps.hsm.generateKeyPair(record.keyType, { extractable: false }),
    ).finally(release);
    this.key = pair.privateKey;
    return pair.publicKeySpki;
  }

  /**
   * The proof of possession and the certificate for the key in hand, or undefined when a pooled key
   * turned out unusable there (its stored public key not its own, or certified before) and was discarded.
   */
  private async certify(
    publicKeySpki: Buffer,
    claimed: PoolKey | undefined,
    mayDiscard: boolean,
  ): Promise<CertifiedKey | undefined> {
    const { deps, record } = this;
    const key = this.key!;
    const csrDer = await this.stage('csr', () =>
      deps.buildCsr({
        subject: record.signer,
        keyType: record.keyType,
        publicKeySpki,
        sign: (digest, options) => deps.hsm.signDigest(key, digest, options),
      }),
    );
    // The CA's own proof-of-possession check, done here first: a stored public key that is not the
    // private key's would fail it there and end the request; here it only costs that key.
    if (claimed && deps.verifyCsr && !csrVerifies(deps.verifyCsr, csrDer, publicKeySpki)) {
      await this.stage('destroy', () => this.destroyKey());
      if (mayDiscard) {
        this.discard(claimed.keyId, 'public-key-mismatch');
        return undefined;
      }
      throw new AttemptEnded({
        code: 'KEY_PUBLIC_MISMATCH',
        message: `pool key ${claimed.keyId} does not match its stored public key`,
      });
    }
    const usable = { publicKeySpki, csrDer };
    try {
      return { ...usable, issued: await this.issue(usable) };
    } catch (err) {
      // The CA certified this public key before: a copy of a used pool key (a restored bundle). It has
      // signed nothing here; it goes like any unusable key.
      const mayDiscardReplayed = this.replayedKeys < (deps.settings.maxReplayedKeys ?? 25);
      if (!(claimed && mayDiscardReplayed && err instanceof StageError && isAlreadyCertified(err.cause))) {
        throw err;
      }
      await this.stage('destroy', () => this.destroyKey());
      this.replayedKeys++;
      this.discard(claimed.keyId, 'already-certified');
      return undefined;
    }
  }

  /**
   * No key for this request. Under `fallback`, before the last delivery and before the attempt did
   * anything the audit log must record, the request is handed back (see handBack): an accepted request
   * waits for a key rather than failing. Otherwise POOL_EMPTY with the retry hint.
   */
  private poolEmpty(reason?: string): never {
    const { keyType } = this.record;
    const mayHandBack =
      this.deps.settings.emptyPoolPolicy === 'fallback' &&
      !this.options.lastDelivery &&
      this.deps.requests.release !== undefined &&
      this.events.length === 0;
    if (mayHandBack) throw new NoKeyYet();
    this.deps.metrics.count('PoolEmptyRejections', keyType);
    const retryAfter = this.deps.settings.retryAfterSeconds;
    throw new AttemptEnded(
      {
        code: 'POOL_EMPTY',
        message: `no pre-generated ${keyType} key available${reason ? ` and ${reason}` : ''}; retry after ${retryAfter} s`,
      },
      retryAfter,
    );
  }

  /**
   * Gives up the lease and throws KeyUnavailableError: the delivery holds the message for the retry hint
   * and the next delivery takes the request over. Nothing was claimed, generated or signed.
   */
  private async handBack(): Promise<never> {
    const { id, keyType } = this.record;
    this.deps.metrics.count('KeysUnavailable', keyType);
    const released = await this.deps.requests.release!(id, this.attemptId, this.clock());
    if (!released) throw new AttemptSupersededError(id);
    throw new KeyUnavailableError(id, this.deps.settings.retryAfterSeconds * 1000);
  }

  private discard(keyId: string, reason: KeyDiscardReason, keySpkiHash?: string): void {
    if (reason !== 'already-certified' && reason !== 'public-key-not-canonical') this.discardedKeys++;
    this.events.push({
      type: 'pool.key-discarded',
      keyId,
      reason,
      requestId: this.record.id,
      ...(keySpkiHash === undefined ? {} : { keySpkiHash }),
    });
    this.deps.onKeyDiscarded?.(keyId, this.record.keyType, reason);
    this.deps.metrics.count('KeysDiscarded', this.record.keyType);
  }

  /** The client's digest signed by the certified key, the key destroyed, the audit events appended. */
  private async signRaw(certified: CertifiedKey): Promise<Signed> {
    const signature = await this.signWithKey(Buffer.from(this.record.digest, 'base64'), certified);
    const signedAt = this.clock();
    await this.stage('destroy', () => this.destroyKey());
    // No signature without its audit events.
    await this.stage('audit', () => this.appendEvents());
    return {
      result: { signature: signature.toString('base64'), ...certificateOf(certified.issued) },
      signedAt,
    };
  }

  /**
   * The signed attributes name the certificate; the still-live key signs them, is destroyed, the
   * container is built and the audit events appended.
   */
  private async signContainer(certified: CertifiedKey): Promise<Signed> {
    const { deps, record } = this;
    const build = deps.buildContainer!;
    const issued = certified.issued;
    const prepared = await this.stage('container', async () =>
      build({
        profile: record.profile!,
        digestAlgorithm: record.digestAlgorithm,
        signatureAlgorithm: record.signatureAlgorithm,
        messageDigest: Buffer.from(record.digest, 'base64'),
        certificatePem: issued.certificatePem,
        chainPem: issued.chainPem,
        signingTime: new Date(this.clock()),
      }),
    );
    const signature = await this.signWithKey(prepared.toBeSigned, certified);
    const signedAt = this.clock();
    await this.stage('destroy', () => this.destroyKey());
    const { level, timeStampToken, validationData } = await this.extend(signature, issued);
    const cms = await this.stage('container', async () =>
      prepared.finish(signature, {
        timeStampToken,
        // CAdES carries its validation data; a PDF carries it in its DSS, written by the client.
        validationData: record.profile === 'CAdES-B-B' ? validationData : undefined,
      }),
    );
    await this.stage('audit', () => this.appendEvents());
    return {
      result: {
        cms: cms.toString('base64'),
        ...certificateOf(issued),
        reachedLevel: level,
        ...(validationData ? { validationData: encodeValidationData(validationData) } : {}),
      },
      signedAt,
    };
  }

  /**
   * Beyond B-B: the signature value's time-stamp (B-T), then the validation data (B-LT: the OCSP response
   * the CA issued the certificate with, else the responder's). A TSA or responder that fails ends the request
   * with its code unless the request accepts the level reached so far (its minimumLevel).
   */
  private async extend(
    signature: Buffer,
    issued: IssuedCertificate,
  ): Promise<{ level: SignatureLevel; timeStampToken?: Buffer; validationData?: ValidationData }> {
    // Records without a level predate levels (or come from tests that build B-B containers): B-B.
    const wanted = this.record.level ?? 'B-B';
    const minimum = this.record.minimumLevel ?? wanted;
    if (!levelAtLeast(wanted, 'B-T')) return { level: 'B-B' };
    const settle = (reached: SignatureLevel, code: FailureCode, err: unknown): void => {
      if (!levelAtLeast(reached, minimum)) {
        throw new AttemptEnded({
          code,
          message:
            code === 'TSA_UNAVAILABLE'
              ? 'the time-stamping authority did not answer'
              : 'the validation data (OCSP, CRL) could not be collected',
        });
      }
      this.deps.onLevelLowered?.(reached, code, err);
    };
    let timeStampToken: Buffer;
    try {
      if (!this.deps.timeStamper) throw new Error('no time-stamping authority configured');
      const stamper = this.deps.timeStamper;
      timeStampToken = await this.stage('timestamp', () =>
        stamper.timeStamp(signature, this.record.digestAlgorithm),
      );
    } catch (err) {
      settle('B-B', 'TSA_UNAVAILABLE', err);
      return { level: 'B-B' };
    }
    if (!levelAtLeast(wanted, 'B-LT')) return { level: 'B-T', timeStampToken };
    try {
      if (!this.deps.validationData) throw new Error('no validation data source configured');
      const source = this.deps.validationData;
      const validationData = await this.stage('validation', () =>
        source.collect({
          certificatePem: issued.certificatePem,
          chainPem: issued.chainPem,
          timeStampToken,
          ocspResponse: issued.ocspResponse,
        }),
      );
      return { level: 'B-LT', timeStampToken, validationData };
    } catch (err) {
      settle('B-T', 'VALIDATION_DATA_UNAVAILABLE', err);
      return { level: 'B-T', timeStampToken };
    }
  }

  private async signWithKey(
    digest: Buffer,
    usable: CertifiedKey,
    document?: { readonly index: number; readonly digestAlgorithm: DigestAlgorithm },
  ): Promise<Buffer> {
    const key = this.key!;
    const signature = await this.stage('sign', () =>
      this.deps.hsm.signDigest(key, digest, {
        digestAlgorithm: document?.digestAlgorithm ?? this.record.digestAlgorithm,
        signatureAlgorithm: this.record.signatureAlgorithm,
      }),
    );
    this.events.push(
      signatureMadeEvent({
        requestId: this.record.id,
        signature,
        publicKeySpki: usable.publicKeySpki,
        keyId: this.keyId,
        ...(document ? { documentIndex: document.index } : {}),
      }),
    );
    return signature;
  }

  /**
   * A request with `documents`: the one certified key signs every document in input order (raw: its
   * digest; cms: its container's signed attributes) and is destroyed after the last; then each container
   * gets its own signature time-stamp, and the validation data (one leaf, one TSA: the same for all) is
   * collected once, after the last time-stamp. Each document reaches its own level within its minimum;
   * any failure fails the whole request, and nothing of any document is stored.
   */
  private async signDocuments(certified: CertifiedKey, documents: readonly SignDocument[]): Promise<Signed> {
    const { record } = this;
    const issued = certified.issued;
    const { made, signedAt } = await this.signEachDocument(certified, documents);
    await this.stage('destroy', () => this.destroyKey());

    // Each container's signature time-stamp, at its level (or ending at its minimum).
    const levels: DocumentLevels[] = documents.map((d) => ({
      wanted: d.format === 'cms' ? (d.level ?? 'B-B') : undefined,
      minimum: d.format === 'cms' ? (d.minimumLevel ?? d.level ?? 'B-B') : undefined,
    }));
    const tokens = await this.timeStampDocuments(documents, made, levels);
    // The validation data, once, after the last time-stamp (the OCSP response postdates every one).
    const needing = documents
      .map((_, i) => i)
      .filter((i) => tokens[i] !== undefined && levelAtLeast(levels[i].wanted!, 'B-LT'));
    const validationData = await this.collectDocumentsValidationData(issued, tokens, needing, levels);

    const results: DocumentResult[] = documents.map((doc, index) => {
      const { signature, prepared } = made[index];
      if (!prepared) return { index, signature: signature.toString('base64') };
      const token = tokens[index];
      const data = validationData && needing.includes(index) ? validationData : undefined;
      const level: SignatureLevel = data ? 'B-LT' : token ? 'B-T' : 'B-B';
      const cms = prepared.finish(signature, {
        timeStampToken: token,
        // CAdES carries its validation data; a PDF carries it in its DSS, written by the client.
        validationData: doc.profile === 'CAdES-B-B' ? data : undefined,
      });
      return {
        index,
        cms: cms.toString('base64'),
        reachedLevel: level,
        ...(data ? { validationData: encodeValidationData(data) } : {}),
      };
    });
    await this.stage('audit', () => this.appendEvents());
    return {
      result: { ...certificateOf(issued), documentResults: results, resultsExpireAt: record.expiresAt },
      signedAt,
    };
  }

  /** The one key signs every document in input order: raw, its digest; cms, its container's signed attributes. */
  private async signEachDocument(
    certified: CertifiedKey,
    documents: readonly SignDocument[],
  ): Promise<{ made: MadeSignature[]; signedAt: number }> {
    const { deps, record } = this;
    const issued = certified.issued;
    const made: MadeSignature[] = [];
    let signedAt = 0;
    for (const [index, doc] of documents.entries()) {
      const prepared =
        doc.format === 'cms'
          ? await this.stage('container', async () =>
              deps.buildContainer!({
                profile: doc.profile ?? 'CAdES-B-B',
                digestAlgorithm: doc.digestAlgorithm,
                signatureAlgorithm: record.signatureAlgorithm,
                messageDigest: Buffer.from(doc.digest, 'base64'),
                certificatePem: issued.certificatePem,
                chainPem: issued.chainPem,
                signingTime: new Date(this.clock()),
              }),
            )
          : undefined;
      const toBeSigned = prepared ? prepared.toBeSigned : Buffer.from(doc.digest, 'base64');
      const signature = await this.signWithKey(toBeSigned, certified, {
        index,
        digestAlgorithm: doc.digestAlgorithm,
      });
      signedAt = this.clock();
      made.push({ signature, prepared });
    }
    return { made, signedAt };
  }

  /** A document's TSA or validation data failed: the request ends unless the level reached is within its minimum. */
  private settleDocument(
    levels: readonly DocumentLevels[],
    i: number,
    reached: SignatureLevel,
    code: FailureCode,
    err: unknown,
  ): void {
    if (!levelAtLeast(reached, levels[i].minimum!)) {
      throw new AttemptEnded({
        code,
        message:
          code === 'TSA_UNAVAILABLE'
            ? `the time-stamping authority did not answer (document ${i})`
            : `the validation data (OCSP, CRL) could not be collected (document ${i})`,
      });
    }
    this.deps.onLevelLowered?.(reached, code, err);
  }

  /** Each container that wants B-T or more: its signature's time-stamp token (undefined where none). */
  private async timeStampDocuments(
    documents: readonly SignDocument[],
    made: readonly MadeSignature[],
    levels: readonly DocumentLevels[],
  ): Promise<Array<Buffer | undefined>> {
    const { deps } = this;
    const tokens: Array<Buffer | undefined> = [];
    for (const [i, doc] of documents.entries()) {
      const wanted = levels[i].wanted;
      if (!wanted || !levelAtLeast(wanted, 'B-T')) {
        tokens.push(undefined);
        continue;
      }
      try {
        if (!deps.timeStamper) throw new Error('no time-stamping authority configured');
        const stamper = deps.timeStamper;
        tokens.push(
          await this.stage('timestamp', () => stamper.timeStamp(made[i].signature, doc.digestAlgorithm)),
        );
      } catch (err) {
        this.settleDocument(levels, i, 'B-B', 'TSA_UNAVAILABLE', err);
        tokens.push(undefined);
      }
    }
    return tokens;
  }

  /** The validation data for the documents `needing` it, collected once with the last of their tokens. */
  private async collectDocumentsValidationData(
    issued: IssuedCertificate,
    tokens: readonly (Buffer | undefined)[],
    needing: readonly number[],
    levels: readonly DocumentLevels[],
  ): Promise<ValidationData | undefined> {
    if (needing.length === 0) return undefined;
    const { deps } = this;
    try {
      if (!deps.validationData) throw new Error('no validation data source configured');
      const source = deps.validationData;
      const last = tokens[needing[needing.length - 1]]!;
      return await this.stage('validation', () =>
        source.collect({
          certificatePem: issued.certificatePem,
          chainPem: issued.chainPem,
          timeStampToken: last,
          ocspResponse: issued.ocspResponse,
        }),
      );
    } catch (err) {
      for (const i of needing) this.settleDocument(levels, i, 'B-T', 'VALIDATION_DATA_UNAVAILABLE', err);
      return undefined;
    }
  }

  /**
   * The certificate: the issuer verifies the identity assertion against what this attempt will sign and
   * takes the subject from it, never from the record or the CSR. It is released to this attempt as it is
   * issued: an attempt that takes the request over gets no other (ALREADY_CERTIFIED) unless the audit
   * log shows no signature made with it; then one replacement, the first revoked `superseded`.
   */
  private issue(usable: UsableKey): Promise<IssuedCertificate> {
    const { record } = this;
    return this.stage('issue', () =>
      this.deps.issuer.issue({
        requestId: record.id,
        csrDer: usable.csrDer,
        attemptId: this.attemptId,
        assertion: record.identityAssertion!,
        binding: requestBindingOf(record),
        ...(record.signMessage === undefined ? {} : { signMessage: record.signMessage }),
        ...(this.wantsLongTerm() ? { ocspResponse: true } : {}),
      }),
    );
  }

  /** Whether a container of this request asks for B-LT: then the CA's OCSP response is worth its signature. */
  private wantsLongTerm(): boolean {
    const { record } = this;
    const longTerm = (level: SignatureLevel | undefined): boolean => levelAtLeast(level ?? 'B-B', 'B-LT');
    return record.documents
      ? record.documents.some((d) => d.format === 'cms' && longTerm(d.level))
      : (record.format ?? 'raw') === 'cms' && longTerm(record.level);
  }

  private async appendEvents(): Promise<void> {
    const batch = this.events.splice(0);
    if (batch.length === 0 || !this.deps.audit) return;
    const receipts = await this.deps.audit.appendMany(batch);
    const signature = batch.findIndex((e) => e.type === 'signature.made');
    if (signature >= 0) this.receipt = receipts[signature];
  }

  /** Forgets the key only once the HSM confirmed the destroy, so a retry (or the safety net) tries again. */
  private async destroyKey(): Promise<void> {
    const key = this.key;
    if (!key) return;
    await this.deps.hsm.destroy(key);
    this.key = undefined;
    if (this.keyId)
      this.events.push({ type: 'pool.key-destroyed', keyId: this.keyId, requestId: this.record.id });
  }

  private async complete(signed: Signed): Promise<SignOutcome> {
    const finishedAt = this.clock();
    const stored = await this.deps.requests.complete(this.record.id, this.attemptId, {
      ...signed.result,
      ...(this.receipt ? { receipt: this.receipt } : {}),
      pooledKey: this.pooledKey!,
      keyAcquiredAt: this.keyAcquiredAt!,
      finishedAt,
      stageMs: this.durations,
      discardedKeys: this.discardedKeys + this.replayedKeys,
    });
    if (!stored) throw new AttemptSupersededError(this.record.id);
    const d = this.durations;
    return {
      status: 'signed',
      record: stored,
      replayed: false,
      stages: {
        acquireKeyMs: this.keyAcquiredAt! - this.startedAt,
        signMs: d.sign ?? 0,
        csrMs: d.csr ?? 0,
        issueMs: d.issue ?? 0,
        totalMs: finishedAt - this.startedAt,
      },
    };
  }

  private async fail(error: RequestError, retryAfterSeconds?: number): Promise<SignOutcome> {
    // Best effort: what this attempt did to pool keys is recorded even when it fails.
    await this.stage('audit', () => this.appendEvents()).catch(() => undefined);
    const stored = await this.deps.requests.fail(this.record.id, this.attemptId, {
      error,
      pooledKey: this.pooledKey,
      keyAcquiredAt: this.keyAcquiredAt,
      finishedAt: this.clock(),
      stageMs: this.durations,
      discardedKeys: this.discardedKeys + this.replayedKeys,
    });
    if (!stored) throw new AttemptSupersededError(this.record.id);
    return { status: 'failed', record: stored, replayed: false, retryAfterSeconds };
  }
}

function encodeValidationData(data: ValidationData): SignedResult['validationData'] {
  const b64 = (list: readonly Buffer[]): string[] => list.map((der) => der.toString('base64'));
  return {
    certificates: b64(data.certificates),
    ocspResponses: b64(data.ocspResponses),
    crls: b64(data.crls),
  };
}

function certificateOf(issued: IssuedCertificate): Signed['result'] {
  return {
    certificate: issued.certificatePem,
    certificateSerial: issued.serialHex,
    chain: issued.chainPem,
  };
}
