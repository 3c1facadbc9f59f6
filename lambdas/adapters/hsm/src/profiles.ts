import type { HsmProfileName } from '../../../config/src';

/** AWS CloudHSM (Client SDK 5) vendor mechanisms; see the CloudHSM PKCS#11 "supported mechanisms" page. */
export const CKM_CLOUDHSM_AES_KEY_WRAP_NO_PAD = 0x80002109;
export const CKM_CLOUDHSM_AES_KEY_WRAP_PKCS5_PAD = 0x8000210a;
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
}

export const HSM_PROFILES: Readonly<Record<HsmProfileName, HsmProfile>> = {
  softhsm: {
    name: 'softhsm',
    wrapMechanism: CKM_AES_KEY_WRAP_PAD,
    maxWrappedBytes: 4096,
  },
  cloudhsm: {
    name: 'cloudhsm',
    // Zero padding is CloudHSM's recommended mechanism for wrapping private keys (PKCS#8 in, wrapped out).
    wrapMechanism: CKM_CLOUDHSM_AES_KEY_WRAP_ZERO_PAD,
    maxWrappedBytes: 4096,
  },
};

export function profileFor(name: HsmProfileName): HsmProfile {
  return HSM_PROFILES[name];
}
