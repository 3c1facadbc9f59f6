/**
 * In-memory fakes of the signing core's ports, with the rules the real adapters enforce (conditional
 * state transitions, keys claimed once, HSM objects that must be destroyed), for pure unit tests.
 */
import { createHash } from 'node:crypto';
import { HsmBusyError, HsmError, HsmUnwrapError, type PrivateKeyRef, type KeyType } from '../src/shared';
import { InMemoryPoolMetrics, type PoolHsm, type PoolKey } from '../src/pool';
import type { AuditEvent, AuditReceipt, AuditSink } from '../src/audit';
import type { CanonicalPublicKey, CertificateIssuer } from '../src/pki';
import type {
  ContainerBuilder,
  CsrBuilder,
  FailedResult,
  SignRequestRecord,
  SignRequestStore,
  SignedResult,
  SigningDeps,
  StartAttempt,
  StoredSignRequest,
} from '../src/signing';
import { StageRunner, type AttemptContext } from '../src/signing/attempt-context';
import { AuditBuffer } from '../src/signing/audit-buffer';
import { documentPlanOf } from '../src/signing/document-signing';
import { OneTimeKey } from '../src/signing/one-time-key';
import { sampleSignRequestRecord } from '../../../scripts/local/sample-sign-request';
export { FakeTime, settle } from '../../test-support/fake-time';

/** The record store with the DynamoDB repository's conditions. */
export class MemoryRequestStore implements SignRequestStore {
  public readonly records = new Map<string, StoredSignRequest>();
  /** Runs before each startAttempt: a test can let another delivery win the race there. */
  public beforeStart?: (id: string) => void;
  /** Absent unless a test sets it: an attempt without a key then fails POOL_EMPTY instead of handing back. */
  public release?: (id: string, attemptId: string, now: number) => Promise<boolean>;

  public put(record: SignRequestRecord | StoredSignRequest): void {
    this.records.set(record.id, record);
  }

  public async get(id: string): Promise<StoredSignRequest | undefined> {
    return this.records.get(id);
  }

  public async startAttempt(id: string, attempt: StartAttempt): Promise<StoredSignRequest | undefined> {
    this.beforeStart?.(id);
    const r = this.records.get(id);
    if (!r) return undefined;
    const ok = attempt.takeOverFrom
      ? r.status === 'signing' &&
        r.attemptId === attempt.takeOverFrom.attemptId &&
        (r.leaseUntil ?? 0) <= attempt.startedAt
      : r.status === 'received';
    if (!ok) return undefined;
    return this.set(id, {
      ...r,
      status: 'signing',
      attemptId: attempt.attemptId,
      startedAt: attempt.startedAt,
      leaseUntil: attempt.leaseUntil,
      attempts: (r.attempts ?? 0) + 1,
    });
  }

  public async complete(
    id: string,
    attemptId: string,
    result: SignedResult,
  ): Promise<StoredSignRequest | undefined> {
    const r = this.owned(id, attemptId);
    return r && this.set(id, { ...r, ...result, status: 'signed', leaseUntil: undefined });
  }

  public async fail(
    id: string,
    attemptId: string,
    result: FailedResult,
  ): Promise<StoredSignRequest | undefined> {
    const r = this.owned(id, attemptId);
    return r && this.set(id, { ...r, ...result, status: 'failed', leaseUntil: undefined });
  }

  private owned(id: string, attemptId: string): StoredSignRequest | undefined {
    const r = this.records.get(id);
    return r?.status === 'signing' && r.attemptId === attemptId ? r : undefined;
  }

  private set(id: string, record: StoredSignRequest): StoredSignRequest {
    this.records.set(id, record);
    return record;
  }
}

const HSM_ERRORS = { HsmError, HsmBusyError, HsmUnwrapError } as const;

/** An error of the HSM port as the PKCS#11 adapter throws it: the class and the CKR name as its code. */
export function hsmError(name: keyof typeof HSM_ERRORS, code = 'CKR_FUNCTION_FAILED'): Error {
  return new HSM_ERRORS[name](`${name} (${code})`, 'test', undefined, code);
}

type HsmOperation = 'generateKeyPair' | 'wrapPrivateKey' | 'unwrapPrivateKey' | 'signDigest' | 'destroy';

/**
 * An HSM holding key objects by handle. `failures` queues errors per operation (taken one per call);
 * every unwrapped or generated key is a live object until destroyed.
 */
export class FakeHsm implements PoolHsm {
  public readonly live = new Set<string>();
  public readonly calls: HsmOperation[] = [];
  public readonly failures: Partial<Record<HsmOperation, Error[]>> = {};
  /** The private key behind each public key, as the CSR check sees it. */
  public readonly keyOf = new Map<string, string>();
  private next = 0;

  public async generateKeyPair(
    keyType: KeyType,
  ): Promise<{ privateKey: PrivateKeyRef; publicKeySpki: Buffer }> {
    this.enter('generateKeyPair');
    const privateKey = this.object(keyType);
    const publicKeySpki = Buffer.from(`spki-of-generated-${privateKey.handle.toString()}`);
    this.keyOf.set(publicKeySpki.toString(), privateKey.handle.toString());
    return { privateKey, publicKeySpki };
  }

  public async wrapPrivateKey(): Promise<Buffer> {
    this.enter('wrapPrivateKey');
    return Buffer.from('wrapped');
  }

  public async unwrapPrivateKey(wrapped: Buffer, keyType: KeyType): Promise<PrivateKeyRef> {
    this.enter('unwrapPrivateKey');
    // The wrapped blob names the private key it holds (see poolKey).
    return this.object(keyType, wrapped.toString());
  }

  public async signDigest(key: PrivateKeyRef, digest: Buffer, _options?: unknown): Promise<Buffer> {
    this.enter('signDigest');
    const handle = key.handle.toString();
    if (!this.live.has(handle)) throw hsmError('HsmError', 'CKR_KEY_HANDLE_INVALID');
    return Buffer.concat([Buffer.from(`sig(${handle}):`), digest]);
  }

  public async destroy(key: PrivateKeyRef): Promise<void> {
    this.enter('destroy');
    this.live.delete(key.handle.toString());
  }

  private enter(operation: HsmOperation): void {
    this.calls.push(operation);
    const error = this.failures[operation]?.shift();
    if (error) throw error;
  }

  private object(keyType: KeyType, handle = `generated-${this.next++}`): PrivateKeyRef {
    this.live.add(handle);
    return { keyType, handle: Buffer.from(handle), token: false };
  }
}

/** A pool key whose wrapped blob names its private key `key-<n>` and whose stored public key matches it. */
export function poolKey(n: number, overrides: Partial<PoolKey> = {}): PoolKey {
  return {
    keyId: `k${n}`,
    keyType: 'EC-P256',
    wrappedKey: Buffer.from(`key-${n}`),
    publicKeySpki: Buffer.from(`spki-of-key-${n}`),
    wrapKeyLabel: 'wrap-v1',
    hsmProfile: 'softhsm',
    createdAt: 0,
    expiresAt: 4_000_000_000,
    ...overrides,
  };
}

/** The dependencies with writable fields, so a test can break one after building the harness. */
export type MutableDeps = { -readonly [K in keyof SigningDeps]: SigningDeps[K] };

export interface Harness {
  readonly deps: MutableDeps;
  readonly store: MemoryRequestStore;
  readonly hsm: FakeHsm;
  readonly pool: PoolKey[];
  readonly metrics: InMemoryPoolMetrics;
  readonly appended: AuditEvent[];
  readonly issued: string[];
  /** Order of the steps that matter for the AdES rule "certificate before signature". */
  readonly order: string[];
}

/** A complete set of fakes; `overrides` replaces any dependency or setting. */
export function harness(
  overrides: Partial<Omit<SigningDeps, 'settings'>> & { settings?: Partial<SigningDeps['settings']> } = {},
): Harness {
  const store = new MemoryRequestStore();
  const hsm = new FakeHsm();
  const pool: PoolKey[] = [];
  const metrics = new InMemoryPoolMetrics();
  const appended: AuditEvent[] = [];
  const issued: string[] = [];
  const order: string[] = [];
  let now = 1_000_000;
  // The CSR "signature" is the HSM's signature: it verifies when the key behind the public key signed it.
  const buildCsr: CsrBuilder = async ({ publicKeySpki, sign }) => {
    const signature = await sign(Buffer.from('csr-info'), {
      digestAlgorithm: 'SHA-256',
      signatureAlgorithm: 'ECDSA',
    });
    return Buffer.from(JSON.stringify({ spki: publicKeySpki.toString(), signature: signature.toString() }));
  };
  // The signer's check: the CSR's signature against the public key it was built from (the pool record's).
  const verifyCsr = (csrDer: Buffer, publicKeySpki: Buffer): void => {
    const { signature } = JSON.parse(csrDer.toString()) as { signature: string };
    const spki = publicKeySpki.toString();
    const holder = spki.startsWith('spki-of-generated-') ? hsm.keyOf.get(spki) : spki.replace('spki-of-', '');
    if (!signature.startsWith(`sig(${holder}):`)) throw new Error('CSR signature does not verify');
  };
  const issuer: CertificateIssuer = {
    issue: async ({ requestId }) => {
      order.push('issue');
      issued.push(requestId);
      return { certificatePem: `cert-for-${requestId}`, chainPem: ['issuing', 'root'], serialHex: '0a' };
    },
  };
  const buildContainer: ContainerBuilder = (input) => ({
    toBeSigned: createHash('sha256').update(`attrs naming ${input.certificatePem}`).digest(),
    finish: (signature) => Buffer.concat([Buffer.from('cms:'), signature]),
  });
  let sequence = 0;
  const audit: AuditSink = {
    append: async (event) => (await audit.appendMany([event]))[0],
    appendMany: async (events) => {
      order.push('audit');
      appended.push(...events);
      return events.map((_, leafIndex): AuditReceipt => ({
        chain: 0,
        sequence: sequence++,
        hash: 'ab'.repeat(32),
        leafIndex,
        treeSize: events.length,
        path: [],
      }));
    },
  };
  const realSign = hsm.signDigest.bind(hsm);
  hsm.signDigest = async (key, digest, options) => {
    order.push('sign');
    return realSign(key, digest, options);
  };
  // The fakes' keys are canonical; `reencoded:<spki>` is the same key stored in another encoding.
  const canonicalKey = (spki: Buffer): CanonicalPublicKey => {
    const key = Buffer.from(spki.toString().replace(/^reencoded:/, ''));
    return {
      keyType: 'EC-P256',
      spki: key,
      hash: createHash('sha256').update(key).digest('hex'),
      canonical: key.equals(spki),
    };
  };
  const { settings, ...rest } = overrides;
  const deps: MutableDeps = {
    requests: store,
    pool: { claim: async () => pool.shift() },
    hsm,
    buildCsr,
    verifyCsr,
    canonicalKey,
    issuer,
    buildContainer,
    audit,
    metrics,
    sleep: async () => undefined,
    clock: () => (now += 5),
    newAttemptId: (() => {
      let n = 0;
      return () => `attempt-${++n}`;
    })(),
    settings: {
      emptyPoolPolicy: 'fallback',
      retryAfterSeconds: 30,
      leaseMs: 60_000,
      hsmProfile: 'softhsm',
      ...settings,
    },
    ...rest,
  };
  return { deps, store, hsm, pool, metrics, appended, issued, order };
}

/** A promise a test resolves when it chooses: holds an HSM call in flight. */
export function gate(): { readonly promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** A `received` request (the sample record with `overrides`), stored in the harness. */
export function received(h: Harness, overrides: Partial<StoredSignRequest> = {}): StoredSignRequest {
  const record = sampleSignRequestRecord(overrides) as StoredSignRequest;
  h.store.put(record);
  return record;
}

/** One attempt's context over the harness's fakes, for tests of a single stage. */
export function attemptContext(h: Harness, record: StoredSignRequest): AttemptContext {
  const clock = h.deps.clock!;
  const stages = new StageRunner(h.deps, clock);
  const audit = new AuditBuffer(h.deps.audit);
  return {
    deps: h.deps,
    record,
    attemptId: 'attempt-under-test',
    clock,
    options: {},
    plan: documentPlanOf(record),
    stage: (name, fn) => stages.run(name, fn),
    audit,
    key: new OneTimeKey(h.hsm, audit, record.id),
  };
}
