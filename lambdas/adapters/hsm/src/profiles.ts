import type { HsmProfileName } from '@pipeline/config';
import { softhsmLockPath, withTokenFileLock } from './token-file-lock';

/** AWS CloudHSM (Client SDK 5) vendor mechanisms; see the CloudHSM PKCS#11 "supported mechanisms" page. */
export const CKM_CLOUDHSM_AES_KEY_WRAP_ZERO_PAD = 0x8000216f;
/** Standard RFC 5649 AES key wrap with padding (PKCS#11 v2.40 CKM_AES_KEY_WRAP_PAD). */
export const CKM_AES_KEY_WRAP_PAD = 0x0000210a;

/**
 * Everything that differs between HSM kinds, in one place. The rest of the adapter only asks the profile.
 */
export interface HsmProfile {
  readonly name: HsmProfileName;
  /** Mechanism that wraps/unwraps pool private keys (PKCS#8) under the AES wrapping key. */
  readonly wrapMechanism: number;
  /** Upper bound for a wrapped RSA-4096 PKCS#8 blob plus padding: sizes the wrap output buffer. */
  readonly maxWrappedBytes: number;
  /**
   * Pool private keys are generated with CKA_WRAP_WITH_TRUSTED, so the HSM wraps them only under a key
   * with CKA_TRUSTED: the pool wrapping key, which only the HSM's security officer can mark.
   */
  readonly trustedWrapping: boolean;
  /**
   * The wrapping key carries a CKA_UNWRAP_TEMPLATE (every key it unwraps is a sensitive, non-extractable,
   * sign-only session object, whatever the caller asks) and a CKA_WRAP_TEMPLATE (it wraps only pool
   * private keys).
   */
  readonly wrapKeyTemplates: boolean;
  /**
   * Who creates the trusted wrapping key. `security-officer`: the SO creates it with CKA_TRUSTED in its
   * own session (SoftHSM lets only a logged-in SO set CKA_TRUSTED, only when an object is made, and an SO
   * session can only make public objects). `crypto-user`: the owning crypto user creates it and an admin
   * marks it trusted afterwards (CloudHSM CLI `key set-attribute --name trusted`).
   */
  readonly wrapKeyCreator: 'security-officer' | 'crypto-user';
  /**
   * The wrapping key is also made unmodifiable (CKA_MODIFIABLE), uncopyable (CKA_COPYABLE) and usable only
   * with the wrap mechanism (CKA_ALLOWED_MECHANISMS), so nobody can turn it into a decryption key.
   */
  readonly lockWrapKey: boolean;
  /**
   * Connections (module initialisation, slot search, login) take a lock shared by every process on the
   * machine (token-file-lock.ts): SoftHSM rewrites its token file on each login and another process reading
   * it meanwhile fails CKR_GENERAL_ERROR.
   */
  readonly serializeConnections: boolean;
}

export const HSM_PROFILES: Readonly<Record<HsmProfileName, HsmProfile>> = {
  softhsm: {
    name: 'softhsm',
    wrapMechanism: CKM_AES_KEY_WRAP_PAD,
    maxWrappedBytes: 4096,
    trustedWrapping: true,
    wrapKeyTemplates: true,
    wrapKeyCreator: 'security-officer',
    lockWrapKey: true,
    serializeConnections: true,
  },
  cloudhsm: {
    name: 'cloudhsm',
    // Zero padding is CloudHSM's recommended mechanism for wrapping private keys (PKCS#8 in, wrapped out).
    wrapMechanism: CKM_CLOUDHSM_AES_KEY_WRAP_ZERO_PAD,
    maxWrappedBytes: 4096,
    trustedWrapping: true,
    wrapKeyTemplates: true,
    wrapKeyCreator: 'crypto-user',
    // CloudHSM takes CKA_MODIFIABLE only at its default; a crypto user the key is shared with cannot
    // change its attributes, which is what keeps the pool user from doing so there.
    lockWrapKey: false,
    serializeConnections: false,
  },
};

export function profileFor(name: HsmProfileName): HsmProfile {
  return HSM_PROFILES[name];
}

/** Runs a connection step (synchronous PKCS#11 calls) under the profile's cross-process lock, if any. */
export function connecting<T>(profile: HsmProfile, fn: () => T): T {
  return profile.serializeConnections ? withTokenFileLock(softhsmLockPath(), fn) : fn();
}
