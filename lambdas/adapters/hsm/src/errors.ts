import * as pkcs11js from 'pkcs11js';

/** CKR_* name for a numeric return value, from pkcs11js's own constant table. */
const CKR_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(pkcs11js)
    .filter(([name, value]) => name.startsWith('CKR_') && typeof value === 'number')
    .map(([name, value]) => [value as number, name]),
);

export function ckrName(code: number): string {
  return CKR_NAMES.get(code) ?? `CKR_0x${code.toString(16).toUpperCase()}`;
}

/**
 * Every failure of the HSM surfaces as an HsmError with the operation and the CKR code.
 * Messages are built from the code and operation only, so a PIN can never leak through them.
 */
export class HsmError extends Error {
  public override name = 'HsmError';
  /** The CKR name (e.g. CKR_KEY_UNEXTRACTABLE), or HSM_ERROR for failures outside the module. */
  public readonly code: string;

  public constructor(
    message: string,
    public readonly operation: string,
    /** PKCS#11 return value, when the failure came from the module. */
    public readonly ckr?: number,
  ) {
    super(message);
    this.code = ckr === undefined ? 'HSM_ERROR' : ckrName(ckr);
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

/** The HSM is busy ("operation in progress" style capacity errors): worth a retry with backoff. */
export class HsmBusyError extends HsmError {
  public override name = 'HsmBusyError';
}

/** Session or login lost: the adapter re-opens and retries once before surfacing this. */
export class HsmSessionError extends HsmError {
  public override name = 'HsmSessionError';
}

const SESSION_LOST = new Set<number>([
  pkcs11js.CKR_SESSION_HANDLE_INVALID,
  pkcs11js.CKR_SESSION_CLOSED,
  pkcs11js.CKR_USER_NOT_LOGGED_IN,
  pkcs11js.CKR_DEVICE_REMOVED,
  pkcs11js.CKR_DEVICE_ERROR,
  pkcs11js.CKR_TOKEN_NOT_PRESENT,
  pkcs11js.CKR_CRYPTOKI_NOT_INITIALIZED,
]);

const UNWRAP_REJECTED = new Set<number>([
  // SoftHSM reports a failed RFC 5649 integrity check as a general error.
  pkcs11js.CKR_GENERAL_ERROR,
  pkcs11js.CKR_WRAPPED_KEY_INVALID,
  pkcs11js.CKR_WRAPPED_KEY_LEN_RANGE,
  pkcs11js.CKR_ENCRYPTED_DATA_INVALID,
  pkcs11js.CKR_ENCRYPTED_DATA_LEN_RANGE,
  pkcs11js.CKR_DATA_INVALID,
  pkcs11js.CKR_DATA_LEN_RANGE,
  pkcs11js.CKR_TEMPLATE_INCONSISTENT,
]);

const BUSY = new Set<number>([
  pkcs11js.CKR_OPERATION_ACTIVE,
  pkcs11js.CKR_SESSION_COUNT,
  pkcs11js.CKR_DEVICE_MEMORY,
  pkcs11js.CKR_HOST_MEMORY,
]);

export function isSessionLost(ckr: number | undefined): boolean {
  return ckr !== undefined && SESSION_LOST.has(ckr);
}

export function isObjectHandleInvalid(ckr: number | undefined): boolean {
  return ckr === pkcs11js.CKR_OBJECT_HANDLE_INVALID || ckr === pkcs11js.CKR_KEY_HANDLE_INVALID;
}

/** Maps anything thrown by pkcs11js to a named HsmError. The original message is dropped on purpose. */
export function toHsmError(err: unknown, operation: string): HsmError {
  if (err instanceof HsmError) return err;
  const ckr = ckrOf(err);
  const message =
    ckr === undefined
      ? `${operation} failed: ${nativeMessage(err)}`
      : `${operation} failed with ${ckrName(ckr)}`;
  if (ckr === undefined) return new HsmError(message, operation);
  if (
    ckr === pkcs11js.CKR_PIN_INCORRECT ||
    ckr === pkcs11js.CKR_PIN_LOCKED ||
    ckr === pkcs11js.CKR_PIN_INVALID
  )
    return new HsmLoginError(message, operation, ckr);
  if (operation === 'unwrap' && UNWRAP_REJECTED.has(ckr)) return new HsmUnwrapError(message, operation, ckr);
  if (ckr === pkcs11js.CKR_KEY_UNEXTRACTABLE || ckr === pkcs11js.CKR_KEY_NOT_WRAPPABLE)
    return new HsmKeyNotExtractableError(message, operation, ckr);
  if (BUSY.has(ckr)) return new HsmBusyError(message, operation, ckr);
  if (SESSION_LOST.has(ckr)) return new HsmSessionError(message, operation, ckr);
  return new HsmError(message, operation, ckr);
}

function ckrOf(err: unknown): number | undefined {
  if (err instanceof pkcs11js.Pkcs11Error && typeof err.code === 'number') return err.code;
  // The async API rejects with plain Errors whose message starts with the CKR name.
  const match = /^(CKR_[A-Z0-9_]+)/.exec(err instanceof Error ? err.message : '');
  if (!match) return undefined;
  const value = (pkcs11js as unknown as Record<string, unknown>)[match[1]];
  return typeof value === 'number' ? value : undefined;
}

/** Native (non-CKR) failures: keep only the first line, which names the failing call, not its arguments. */
function nativeMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0].slice(0, 200);
}
