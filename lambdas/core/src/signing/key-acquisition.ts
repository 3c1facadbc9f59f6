/**
 * A certified one-time key for the attempt, and the discard policy of pool keys that cannot serve.
 *
 * A key comes from the key source (pool/key-source.ts: a claimed pool key, or one generated on the fly,
 * or none: POOL_EMPTY or, under `fallback`, handed back), is unwrapped in the HSM, signs its proof of
 * possession and is certified (certification.ts). A pooled key that cannot serve (wrapped under another
 * profile, its public key stored in another than its canonical encoding, rejected by unwrap, stored with
 * a public key that is not its own, or certified before: a restored copy) is discarded - it is already
 * out of the pool - and the request carries on with the next one, up to maxDiscardedKeys (copies: up to
 * maxReplayedKeys, counted apart).
 */
import type { KeyDiscardReason } from '../audit';
import { canonicalPublicKey } from '../pki/public-key';
import type { ReleaseSlot } from '../pool/fallback-limiter';
import { keySourceFor, type KeySource } from '../pool/key-source';
import type { PoolKey } from '../pool/pool';
import { HsmUnwrapError } from '../shared/hsm';
import { failedWith, StageError, type AttemptContext, type AttemptEnd } from './attempt-context';
import {
  buildProofOfPossession,
  isAlreadyCertified,
  issueCertificate,
  proofVerifies,
  type CertifiedKey,
} from './certification';

/** A pooled key turned out unusable and was discarded: on to the next one. */
const DISCARDED = Symbol('discarded');
type Step<T> = T | typeof DISCARDED | AttemptEnd;

export class KeyAcquisition {
  /** Unusable pool keys discarded (limit maxDiscardedKeys). */
  private discardedKeys = 0;
  /** Copies discarded: certified before or stored non-canonical (limit maxReplayedKeys). */
  private replayedKeys = 0;
  private acquiredAt: number | undefined;
  private servedKey: PoolKey | undefined;
  private readonly keySource: KeySource;

  public constructor(private readonly ctx: AttemptContext) {
    const { deps, clock } = ctx;
    this.keySource =
      deps.keySource ??
      keySourceFor({
        pool: deps.pool,
        policy: deps.settings.emptyPoolPolicy,
        limiter: deps.fallbackLimiter,
        clock,
      });
  }

  /** Every pool key this attempt threw away. */
  public get discarded(): number {
    return this.discardedKeys + this.replayedKeys;
  }

  /** When the key that served (or the last one tried) was in hand, epoch ms. */
  public get keyAcquiredAt(): number | undefined {
    return this.acquiredAt;
  }

  /** The pool key (or a one-time credential's reserved key) in hand; undefined for one generated. */
  public get poolKey(): PoolKey | undefined {
    return this.servedKey;
  }

  /** A key, its proof of possession and its certificate; or how the request ends without one. */
  public async acquire(): Promise<CertifiedKey | AttemptEnd> {
    const { ctx } = this;
    const { record, options } = ctx;
    if (record.credential && 'use' in record.credential) return this.reserved(record.credential.use);
    for (;;) {
      const mayDiscard = this.discardedKeys < (ctx.deps.settings.maxDiscardedKeys ?? 3);
      // The claim, and under `fallback` the wait for a generation slot (or a key keygen stored
      // meanwhile), count as claim time.
      const lastChance = options.lastDelivery ? options.lastChanceWaitMs : undefined;
      const sourced = await ctx.stage('claim', () =>
        this.keySource.next(record.keyType, record.clientId, lastChance),
      );
      if (sourced.kind === 'refused') return this.poolEmpty(sourced.reason);
      const claimed = sourced.kind === 'pooled' ? sourced.key : undefined;
      const publicKeySpki = claimed
        ? await this.unwrapPooledKey(claimed, mayDiscard)
        : await this.generateKey(sourced.kind === 'generate' ? sourced.release : undefined);
      if (publicKeySpki === DISCARDED) continue;
      if (!Buffer.isBuffer(publicKeySpki)) return publicKeySpki;
      this.acquiredAt = ctx.clock();
      this.servedKey = claimed;
      const certified = await this.certify(publicKeySpki, claimed, mayDiscard);
      if (certified !== DISCARDED) return certified;
    }
  }

  /**
   * A one-time credential's key (docs/csc.md): the key its creating request, of this client, certified and
   * kept wrapped, unwrapped and proved like a pool key; the CA releases its certificate to this request
   * only on the second login's evidence. No other key stands in for it: any failure ends the request.
   */
  private async reserved(credentialId: string): Promise<CertifiedKey | AttemptEnd> {
    const { ctx } = this;
    const { deps, record } = ctx;
    const credential = await ctx.stage('claim', () => deps.requests.get(credentialId));
    const reserved = credential?.reservedKey;
    if (
      !credential ||
      !reserved ||
      credential.clientId !== record.clientId ||
      !(credential.credential && 'create' in credential.credential) ||
      credential.keyType !== record.keyType ||
      credential.signatureAlgorithm !== record.signatureAlgorithm
    ) {
      return failedWith('CREDENTIAL_UNKNOWN', 'no one-time credential of this client and key is on record');
    }
    if (reserved.usableUntil <= ctx.clock()) {
      return failedWith('CREDENTIAL_EXPIRED', "the one-time credential's certificate has expired");
    }
    const key: PoolKey = {
      keyId: reserved.keyId,
      keyType: record.keyType,
      wrappedKey: Buffer.from(reserved.wrappedKey, 'base64'),
      publicKeySpki: Buffer.from(reserved.publicKeySpki, 'base64'),
      wrapKeyLabel: reserved.wrapKeyLabel,
      hsmProfile: reserved.hsmProfile,
      createdAt: 0,
      expiresAt: Math.floor(reserved.usableUntil / 1000),
    };
    const publicKeySpki = await this.unwrapPooledKey(key, false, true);
    if (publicKeySpki === DISCARDED) {
      return failedWith('CREDENTIAL_UNKNOWN', 'the one-time credential has no usable key');
    }
    if (!Buffer.isBuffer(publicKeySpki)) return publicKeySpki;
    this.acquiredAt = ctx.clock();
    this.servedKey = key;
    const certified = await this.certify(publicKeySpki, key, false);
    if (certified === DISCARDED) {
      return failedWith('CREDENTIAL_UNKNOWN', 'the one-time credential has no usable key');
    }
    return certified;
  }

  /**
   * A claimed pool key (or a credential's reserved one: not claimed from the pool now), unwrapped into the
   * HSM: its public key, unless it cannot serve.
   */
  private async unwrapPooledKey(
    claimed: PoolKey,
    mayDiscard: boolean,
    reserved = false,
  ): Promise<Step<Buffer>> {
    const { deps, record } = this.ctx;
    this.ctx.key.claimed(claimed.keyId);
    if (!reserved) {
      this.ctx.audit.push({ type: 'pool.key-claimed', keyId: claimed.keyId, requestId: record.id });
      deps.metrics.count('KeysClaimed', record.keyType);
    }
    if (claimed.hsmProfile !== deps.settings.hsmProfile) {
      if (mayDiscard) return this.discard(claimed.keyId, 'profile-mismatch');
      return failedWith(
        'KEY_PROFILE_MISMATCH',
        `pool key ${claimed.keyId} was wrapped under profile ${claimed.hsmProfile}`,
      );
    }
    // The stored public key must be in its one canonical encoding: another encoding of a key hashes
    // as a new key. A re-encoded row is a copy put back by someone who can write the table (keygen
    // writes canonical keys only); it is discarded, counted with the copies the CA refuses, before
    // the HSM does any work for it.
    const stored = (deps.canonicalKey ?? canonicalPublicKey)(claimed.publicKeySpki);
    if (!stored?.canonical) {
      if (this.mayDiscardCopy()) return this.discard(claimed.keyId, 'public-key-not-canonical', stored?.hash);
      return failedWith(
        'PUBLIC_KEY_NOT_CANONICAL',
        `pool key ${claimed.keyId} is stored in a non-canonical encoding, after ${this.replayedKeys} copies`,
      );
    }
    try {
      const ref = await this.ctx.stage('unwrap', () =>
        deps.hsm.unwrapPrivateKey(claimed.wrappedKey, record.keyType, claimed.wrapKeyLabel),
      );
      this.ctx.key.hold(ref);
    } catch (err) {
      // The HSM rejected the wrapped blob (corrupted or wrapped under another key): the key is unusable.
      if (!(err instanceof StageError && err.cause instanceof HsmUnwrapError)) throw err;
      if (mayDiscard) return this.discard(claimed.keyId, 'unwrap-failed');
      // Named like the other unusable-key endings, not by the HSM's generic CKR code.
      return failedWith(
        'KEY_UNWRAP_FAILED',
        `pool key ${claimed.keyId} could not be unwrapped, after ${this.discardedKeys} unusable keys`,
      );
    }
    return claimed.publicKeySpki;
  }

  /** A key generated on the fly (no pool key): its public key; the generation slot, if any, freed after. */
  private async generateKey(release: ReleaseSlot | undefined): Promise<Buffer> {
    const { deps, record } = this.ctx;
    this.ctx.key.generated();
    deps.metrics.count('OnTheFlyFallbacks', record.keyType);
    // Used in place and never stored: generated non-extractable. The slot is freed once the HSM is done.
    const pair = await this.ctx
      .stage('keygen', () => deps.hsm.generateKeyPair(record.keyType, { extractable: false }))
      .finally(release);
    this.ctx.key.hold(pair.privateKey);
    return pair.publicKeySpki;
  }

  /**
   * The proof of possession and the certificate for the key in hand, unless a pooled key turns out
   * unusable there (its stored public key not its own, or certified before).
   */
  private async certify(
    publicKeySpki: Buffer,
    claimed: PoolKey | undefined,
    mayDiscard: boolean,
  ): Promise<Step<CertifiedKey>> {
    const { ctx } = this;
    const usable = { publicKeySpki, csrDer: await buildProofOfPossession(ctx, publicKeySpki) };
    if (claimed && !proofVerifies(ctx, usable)) {
      await ctx.stage('destroy', () => ctx.key.destroy());
      if (mayDiscard) return this.discard(claimed.keyId, 'public-key-mismatch');
      return failedWith(
        'KEY_PUBLIC_MISMATCH',
        `pool key ${claimed.keyId} does not match its stored public key`,
      );
    }
    try {
      return { ...usable, issued: await issueCertificate(ctx, usable) };
    } catch (err) {
      // The CA certified this public key before: a copy of a used pool key (a restored bundle). It has
      // signed nothing here; it goes like any unusable key.
      const copy = claimed && err instanceof StageError && isAlreadyCertified(err.cause);
      if (!copy || !this.mayDiscardCopy()) throw err;
      await ctx.stage('destroy', () => ctx.key.destroy());
      return this.discard(claimed.keyId, 'already-certified');
    }
  }

  /**
   * No key for this request. Under `fallback`, before the last delivery and before the attempt did
   * anything the audit log must record, the request is handed back: an accepted request waits for a key
   * rather than failing. Otherwise POOL_EMPTY with the retry hint.
   */
  private poolEmpty(reason?: string): AttemptEnd {
    const { deps, record, options } = this.ctx;
    const mayHandBack =
      deps.settings.emptyPoolPolicy === 'fallback' &&
      !options.lastDelivery &&
      deps.requests.release !== undefined &&
      this.ctx.audit.pending === 0;
    if (mayHandBack) return { ended: 'handed-back' };
    deps.metrics.count('PoolEmptyRejections', record.keyType);
    const retryAfter = deps.settings.retryAfterSeconds;
    return failedWith(
      'POOL_EMPTY',
      `no pre-generated ${record.keyType} key available${reason ? ` and ${reason}` : ''}; retry after ${retryAfter} s`,
      retryAfter,
    );
  }

  private mayDiscardCopy(): boolean {
    return this.replayedKeys < (this.ctx.deps.settings.maxReplayedKeys ?? 25);
  }

  private discard(keyId: string, reason: KeyDiscardReason, keySpkiHash?: string): typeof DISCARDED {
    const { deps, record } = this.ctx;
    if (reason === 'already-certified' || reason === 'public-key-not-canonical') this.replayedKeys++;
    else this.discardedKeys++;
    this.ctx.audit.push({
      type: 'pool.key-discarded',
      keyId,
      reason,
      requestId: record.id,
      ...(keySpkiHash === undefined ? {} : { keySpkiHash }),
    });
    deps.onKeyDiscarded?.(keyId, record.keyType, reason);
    deps.metrics.count('KeysDiscarded', record.keyType);
    return DISCARDED;
  }
}
