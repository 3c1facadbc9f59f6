/**
 * The attempt's one HSM key object at a time: which pool key it is (or one generated on the fly), and its
 * destroy. The HSM object is forgotten only once the HSM confirmed the destroy, so a retry (or the
 * attempt's safety net) tries again.
 */
import type { PoolHsm } from '../pool/pool';
import type { PrivateKeyRef } from '../shared/hsm';
import type { AuditBuffer } from './audit-buffer';

export class OneTimeKey {
  private ref: PrivateKeyRef | undefined;
  private id: string | undefined;
  private pooledKey: boolean | undefined;

  public constructor(
    private readonly hsm: Pick<PoolHsm, 'destroy'>,
    private readonly audit: AuditBuffer,
    private readonly requestId: string,
  ) {}

  /** The pool key's id (undefined for a key generated on the fly). */
  public get keyId(): string | undefined {
    return this.id;
  }

  /** Whether the last key this attempt took came from the pool (undefined before any). */
  public get pooled(): boolean | undefined {
    return this.pooledKey;
  }

  /** The live HSM object; only called between hold() and destroy(). */
  public get handle(): PrivateKeyRef {
    if (!this.ref) throw new Error('no live one-time key');
    return this.ref;
  }

  /** A pool key was claimed: it is this attempt's, whether or not it turns out usable. */
  public claimed(keyId: string): void {
    this.pooledKey = true;
    this.id = keyId;
  }

  /** A key is to be generated on the fly: no pool key stands behind it. */
  public generated(): void {
    this.pooledKey = false;
    this.id = undefined;
  }

  /** The HSM object of the key in hand (unwrapped or generated). */
  public hold(ref: PrivateKeyRef): void {
    this.ref = ref;
  }

  public async destroy(): Promise<void> {
    const ref = this.ref;
    if (!ref) return;
    await this.hsm.destroy(ref);
    this.ref = undefined;
    if (this.id) this.audit.push({ type: 'pool.key-destroyed', keyId: this.id, requestId: this.requestId });
  }
}
