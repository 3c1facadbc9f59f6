export { buildCsr, verifyCsr } from './csr';
export { algorithmIdentifier, digest, keyTypeOfSpki, schemeFor, schemeForOid } from './algorithms';
export { encodeName, type NameAttribute } from './name';
export { pem, pemToDer } from './der';
export * from './errors';
export type * from './types';
