export * from './config';
export * from './errors';
export * from './pin';
export type * from './types';
