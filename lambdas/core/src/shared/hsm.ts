/**
 * The HSM port: what the CA, the audit log and the key pool need from a hardware security module. Owned
 * by the core; the PKCS#11 adapter (lambdas/adapters/hsm) implements it.
 */
import type { DigestAlgorithm, KeyType, SignatureAlgorithm } from './algorithms';
import { PipelineError } from './errors';

/**
 * A private key object inside the HSM. Opaque to callers: it carries the PKCS#11 handle, never key
 * material. `token` keys (CA, audit) live on the token; others are session objects that must be destroyed.
 */
export interface PrivateKeyRef {
  readonly handle: Buffer;
  readonly keyType: KeyType;
  readonly token: boolean;
  /** Token keys are re-found by label after a reconnect (handles are invalid after one). */
  readonly label?: string;
}

export interface GeneratedKeyPair {
  readonly privateKey: PrivateKeyRef;
  /** SubjectPublicKeyInfo, DER. The public key object itself is not kept in the HSM. */
  readonly publicKeySpki: Buffer;
}

export interface GenerateOptions {
  /**
   * Pool keys must be wrapped once, so they are generated extractable (but sensitive: never in clear).
   * On-the-fly keys are used in place and are generated non-extractable.
   */
  readonly extractable: boolean;
  /** Store on the token under this label (CA and audit keys). Omit for a session object. */
  readonly tokenLabel?: string;
}

export interface SignOptions {
  readonly digestAlgorithm: DigestAlgorithm;
  readonly signatureAlgorithm: SignatureAlgorithm;
}

/** Attributes a caller may inspect (tests check CA keys are sensitive and non-extractable). */
export interface KeyAttributes {
  readonly token: boolean;
  readonly sensitive: boolean;
  readonly extractable: boolean;
  readonly sign: boolean;
  readonly label?: string;
}

/** What the rest of the service needs from an HSM. Implemented over PKCS#11; test decorators wrap it. */
export interface Hsm {
  generateKeyPair(keyType: KeyType, options: GenerateOptions): Promise<GeneratedKeyPair>;
  /** Wraps a private key with the wrapping key of that label (AES key on the token). */
  wrapPrivateKey(key: PrivateKeyRef, wrapKeyLabel: string): Promise<Buffer>;
  /** Unwraps as a session object that is sensitive, non-extractable and sign-only. */
  unwrapPrivateKey(wrapped: Buffer, keyType: KeyType, wrapKeyLabel: string): Promise<PrivateKeyRef>;
  /** Signs a pre-computed digest; ECDSA signatures come back DER-encoded. */
  signDigest(key: PrivateKeyRef, digest: Buffer, options: SignOptions): Promise<Buffer>;
  destroy(key: PrivateKeyRef): Promise<void>;
  /** Finds a token private key by label (cached; re-found after reconnects). */
  findPrivateKey(label: string, keyType: KeyType): Promise<PrivateKeyRef | undefined>;
  /** SPKI of the token public key with that label, if any. */
  findPublicKeySpki(label: string): Promise<Buffer | undefined>;
  /**
   * Creates the AES-256 wrapping key on the token if it does not exist and the user may make it; returns
   * true when created. A trusted wrapping key is provisioned apart, and a missing one is an error.
   */
  ensureWrappingKey(label: string): Promise<boolean>;
  keyAttributes(key: PrivateKeyRef): Promise<KeyAttributes>;
  /** Number of session (non-token) objects this process can see: zero when nothing leaked. */
  countSessionObjects(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Every failure of the HSM port is an HsmError with the operation and a code: the CKR name (e.g.
 * CKR_KEY_UNEXTRACTABLE) when the module failed, HSM_ERROR for failures outside it. Messages are built
 * from the code and operation only, so a PIN can never leak through them. The PKCS#11 adapter maps its
 * return values to these classes; the core recognises them with `instanceof` or `transient`.
 */
export class HsmError extends PipelineError {
  public override name = 'HsmError';

  public constructor(
    message: string,
    public readonly operation: string,
    /** PKCS#11 return value, when the failure came from the module. */
    public readonly ckr?: number,
    /** The CKR name of `ckr` (the adapter knows the names); default HSM_ERROR, or the value in hex. */
    code: string = ckr === undefined ? 'HSM_ERROR' : `CKR_0x${ckr.toString(16).toUpperCase()}`,
    transient = false,
  ) {
    super(message, code, { transient });
  }
}

/** The token with the configured label is not present in any slot. */
export class HsmTokenNotFoundError extends HsmError {
  public override name = 'HsmTokenNotFoundError';
}

/** C_Login failed (wrong PIN, locked PIN, ...). */
export class HsmLoginError extends HsmError {
  public override name = 'HsmLoginError';
}

/** A token key (wrapping key, CA key) with the given label does not exist. */
export class HsmKeyNotFoundError extends HsmError {
  public override name = 'HsmKeyNotFoundError';
}

/** A wrapped blob was rejected by the HSM: corrupted, truncated, or wrapped under another key. */
export class HsmUnwrapError extends HsmError {
  public override name = 'HsmUnwrapError';
}

/** The key may not leave the HSM, not even wrapped (CKA_EXTRACTABLE false). */
export class HsmKeyNotExtractableError extends HsmError {
  public override name = 'HsmKeyNotExtractableError';
}

/** The HSM is busy ("operation in progress" style capacity errors): transient, worth a retry with backoff. */
export class HsmBusyError extends HsmError {
  public override name = 'HsmBusyError';
  public constructor(message: string, operation: string, ckr?: number, code?: string) {
    super(message, operation, ckr, code, true);
  }
}

/** Session or login lost: the adapter re-opens and retries once before surfacing this; transient. */
export class HsmSessionError extends HsmError {
  public override name = 'HsmSessionError';
  public constructor(message: string, operation: string, ckr?: number, code?: string) {
    super(message, operation, ckr, code, true);
  }
}
