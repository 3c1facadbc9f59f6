export * from './audit-log';
export * from './hsm-signer';
export * from './verify';
export type * from './types';
export * from './create';
