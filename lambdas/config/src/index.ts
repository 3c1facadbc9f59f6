export * from './config';
export * from './errors';
export * from './pin';
export * from './pipeline-config';
export * from './pool-config';
export type * from './types';
export * from './ca-config';
export * from './audit-config';
export * from './identity-config';
