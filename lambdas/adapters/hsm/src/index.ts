export * from './errors';
export { connectHsm } from './connect';
export { Pkcs11Hsm } from './pkcs11-hsm';
export { HSM_PROFILES, profileFor, type HsmProfile } from './profiles';
export type * from './types';
