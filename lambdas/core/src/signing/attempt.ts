/**
 * One attempt at one request: it owns the request (attemptId), at most one HSM key object at a time, and
 * the audit events of what it did. It runs the stages in order and records the outcome:
 *
 *   a certified key (key-acquisition.ts) -> each document signed (document-signing.ts) -> the key
 *   destroyed -> the containers' levels (signature-levels.ts) -> the result (signed-result.ts) -> the audit
 *   events appended -> record `signed`; or `failed` with a code; or, with no key yet under `fallback`,
 *   the lease given up and the message handed back.
 *
 * Nothing is signed with a key before the CA certified it. The HSM object is destroyed on every path.
 */
import { AuditBuffer } from './audit-buffer';
import {
  failedWith,
  isEnd,
  StageError,
  StageRunner,
  type AttemptContext,
  type AttemptEnd,
} from './attempt-context';
import { containersUnsupported, documentPlanOf, signDocuments, tasksMismatched } from './document-signing';
import type { CertifiedKey } from './certification';
import { KeyAcquisition } from './key-acquisition';
import { ONE_TIME_CREDENTIAL_VALIDITY_MS } from '../pki/certificate-store';
import { OneTimeKey } from './one-time-key';
import type { StoredSignRequest } from './request-state';
import type { RequestError } from './sign-request';
import { reachLevels } from './signature-levels';
import { signedResultOf, type SignedFields } from './signed-result';
import type { ProcessOptions, SignOutcome, SigningDeps } from './signing-deps';
import { AttemptSupersededError, KeyUnavailableError } from './signing-errors';
import { requestErrorFor } from './stage-codes';

/** What a finished signature yields for the record. */
interface Signed {
  readonly result: SignedFields;
  /** When the one-time key's (last) signature was made. */
  readonly signedAt: number;
}

export class SigningAttempt {
  private readonly ctx: AttemptContext;
  private readonly stages: StageRunner;
  private readonly keys: KeyAcquisition;
  private readonly startedAt: number;

  public constructor(
    deps: SigningDeps,
    record: StoredSignRequest,
    attemptId: string,
    clock: () => number,
    options: ProcessOptions = {},
  ) {
    this.startedAt = clock();
    this.stages = new StageRunner(deps, clock);
    const audit = new AuditBuffer(deps.audit);
    this.ctx = {
      deps,
      record,
      attemptId,
      clock,
      options,
      plan: documentPlanOf(record),
      stage: (name, fn) => this.stages.run(name, fn),
      audit,
      key: new OneTimeKey(deps.hsm, audit, record.id),
    };
    this.keys = new KeyAcquisition(this.ctx);
  }

  /** Runs the attempt to its outcome (see processSignRequest for what it throws). */
  public async run(): Promise<SignOutcome> {
    let signed: Signed | AttemptEnd;
    try {
      signed = await this.sign();
    } catch (err) {
      if (!(err instanceof StageError)) throw err;
      signed = { ended: 'failed', error: requestErrorFor(err.stage, err.cause) };
    } finally {
      // Safety net: nothing this attempt made stays in the HSM, whatever ended it.
      await this.ctx.key.destroy().catch(() => undefined);
    }
    if (!isEnd(signed)) return this.complete(signed);
    if (signed.ended === 'handed-back') return this.handBack();
    return this.fail(signed.error, signed.retryAfterSeconds);
  }

  /** The stages up to the audit events of the signature; any failure of a stage throws StageError. */
  private async sign(): Promise<Signed | AttemptEnd> {
    const { ctx } = this;
    const { record } = ctx;
    if (!record.identityAssertion) {
      // Nothing the CA could verify (a record the API did not write): no key is spent on it, and the
      // refusal is in the audit log.
      ctx.audit.push({ type: 'request.refused', requestId: record.id, code: 'IDENTITY_EVIDENCE_MISSING' });
      return failedWith(
        'IDENTITY_EVIDENCE_MISSING',
        'the request carries no identity assertion for the CA to verify',
      );
    }
    if (containersUnsupported(ctx))
      return failedWith('CONTAINER_UNSUPPORTED', 'this signer builds no containers');
    // Before any key or certificate: the login's manifest binds the tasks' digests, not their bytes.
    if (tasksMismatched(ctx)) {
      return failedWith('SIGN_TASK_MISMATCH', 'a sign task does not match the digest its login approved');
    }
    const certified = await this.keys.acquire();
    if (isEnd(certified)) return certified;
    if (record.credential && 'create' in record.credential) return this.reserve(certified);
    const { made, signedAt } = await signDocuments(ctx, certified);
    await ctx.stage('destroy', () => ctx.key.destroy());
    const levels = await reachLevels(ctx, made, certified.issued);
    if (isEnd(levels)) return levels;
    const result = await signedResultOf(ctx, certified.issued, made, levels);
    // No signature without its audit events.
    await ctx.stage('audit', () => ctx.audit.append());
    return { result, signedAt };
  }

  /**
   * A one-time credential's creation: the key certified (on the first login) and its HSM object destroyed;
   * the pool key stays wrapped on the record for the one signature a second login approves. Only a pool
   * key can be kept (one generated on the fly is not extractable).
   */
  private async reserve(certified: CertifiedKey): Promise<Signed | AttemptEnd> {
    const { ctx } = this;
    const key = this.keys.poolKey;
    await ctx.stage('destroy', () => ctx.key.destroy());
    if (!key) return failedWith('POOL_EMPTY', 'a one-time credential needs a pool key; retry later');
    await ctx.stage('audit', () => ctx.audit.append());
    const now = ctx.clock();
    return {
      result: {
        certificate: certified.issued.certificatePem,
        certificateSerial: certified.issued.serialHex,
        chain: certified.issued.chainPem,
        reservedKey: {
          keyId: key.keyId,
          wrappedKey: key.wrappedKey.toString('base64'),
          publicKeySpki: key.publicKeySpki.toString('base64'),
          wrapKeyLabel: key.wrapKeyLabel,
          hsmProfile: key.hsmProfile,
          usableUntil: now + ONE_TIME_CREDENTIAL_VALIDITY_MS,
        },
      },
      signedAt: now,
    };
  }

  private async complete(signed: Signed): Promise<SignOutcome> {
    const { deps, record, attemptId, clock, audit, key } = this.ctx;
    const finishedAt = clock();
    const durations = this.stages.durations;
    const keyAcquiredAt = this.keys.keyAcquiredAt!;
    const stored = await deps.requests.complete(record.id, attemptId, {
      ...signed.result,
      ...(audit.receipt ? { receipt: audit.receipt } : {}),
      pooledKey: key.pooled!,
      keyAcquiredAt,
      finishedAt,
      stageMs: durations,
      discardedKeys: this.keys.discarded,
    });
    if (!stored) throw new AttemptSupersededError(record.id);
    // A credential's key signed: its wrapped copy goes (the CA released the certificate to this request only).
    if (record.credential && 'use' in record.credential && key.keyId) {
      await deps.requests.dropReservedKey?.(record.credential.use, key.keyId).catch(() => undefined);
    }
    return {
      status: 'signed',
      record: stored,
      replayed: false,
      stages: {
        acquireKeyMs: keyAcquiredAt - this.startedAt,
        signMs: durations.sign ?? 0,
        csrMs: durations.csr ?? 0,
        issueMs: durations.issue ?? 0,
        totalMs: finishedAt - this.startedAt,
      },
    };
  }

  private async fail(error: RequestError, retryAfterSeconds?: number): Promise<SignOutcome> {
    const { deps, record, attemptId, clock, audit, key } = this.ctx;
    // Best effort: what this attempt did to pool keys is recorded even when it fails.
    await this.ctx.stage('audit', () => audit.append()).catch(() => undefined);
    const stored = await deps.requests.fail(record.id, attemptId, {
      error,
      pooledKey: key.pooled,
      keyAcquiredAt: this.keys.keyAcquiredAt,
      finishedAt: clock(),
      stageMs: this.stages.durations,
      discardedKeys: this.keys.discarded,
    });
    if (!stored) throw new AttemptSupersededError(record.id);
    return { status: 'failed', record: stored, replayed: false, retryAfterSeconds };
  }

  /**
   * Gives up the lease and throws KeyUnavailableError: the delivery holds the message for the retry hint
   * and the next delivery takes the request over. Nothing was claimed, generated or signed.
   */
  private async handBack(): Promise<never> {
    const { deps, record, attemptId, clock } = this.ctx;
    deps.metrics.count('KeysUnavailable', record.keyType);
    const released = await deps.requests.release!(record.id, attemptId, clock());
    if (!released) throw new AttemptSupersededError(record.id);
    throw new KeyUnavailableError(record.id, deps.settings.retryAfterSeconds * 1000);
  }
}
