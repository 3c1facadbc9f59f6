// The HSM error classes are the core's (@pipeline/core/shared): this adapter maps pkcs11js errors onto them.
export { ckrName, isObjectHandleInvalid, isSessionLost, toHsmError } from './errors';
export { connectHsm } from './connect';
export { Pkcs11Hsm } from './pkcs11-hsm';
export { HSM_PROFILES, profileFor, type HsmProfile } from './profiles';
export type {
  GeneratedKeyPair,
  GenerateOptions,
  Hsm,
  HsmOptions,
  KeyAttributes,
  PrivateKeyRef,
  SignOptions,
} from './types';
