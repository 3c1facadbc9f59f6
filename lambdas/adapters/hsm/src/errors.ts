import * as pkcs11js from 'pkcs11js';
import {
  HsmBusyError,
  HsmError,
  HsmKeyNotExtractableError,
  HsmLoginError,
  HsmSessionError,
  HsmUnwrapError,
} from '@pipeline/core/shared';

/** CKR_* name for a numeric return value, from pkcs11js's own constant table. */
const CKR_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(pkcs11js)
    .filter(([name, value]) => name.startsWith('CKR_') && typeof value === 'number')
    .map(([name, value]) => [value as number, name]),
);

export function ckrName(code: number): string {
  return CKR_NAMES.get(code) ?? `CKR_0x${code.toString(16).toUpperCase()}`;
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

/**
 * Maps anything thrown by pkcs11js to a named HsmError: the HSM port's error classes are the core's (the
 * core acts on them; import them from there), with the CKR name as the code. The original message is
 * dropped on purpose.
 */
export function toHsmError(err: unknown, operation: string): HsmError {
  if (err instanceof HsmError) return err;
  const ckr = ckrOf(err);
  const message =
    ckr === undefined
      ? `${operation} failed: ${nativeMessage(err)}`
      : `${operation} failed with ${ckrName(ckr)}`;
  if (ckr === undefined) return new HsmError(message, operation);
  const code = ckrName(ckr);
  if (
    ckr === pkcs11js.CKR_PIN_INCORRECT ||
    ckr === pkcs11js.CKR_PIN_LOCKED ||
    ckr === pkcs11js.CKR_PIN_INVALID
  )
    return new HsmLoginError(message, operation, ckr, code);
  if (operation === 'unwrap' && UNWRAP_REJECTED.has(ckr))
    return new HsmUnwrapError(message, operation, ckr, code);
  if (ckr === pkcs11js.CKR_KEY_UNEXTRACTABLE || ckr === pkcs11js.CKR_KEY_NOT_WRAPPABLE)
    return new HsmKeyNotExtractableError(message, operation, ckr, code);
  if (BUSY.has(ckr)) return new HsmBusyError(message, operation, ckr, code);
  if (SESSION_LOST.has(ckr)) return new HsmSessionError(message, operation, ckr, code);
  return new HsmError(message, operation, ckr, code);
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
