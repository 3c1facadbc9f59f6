export * from './api';
export * from './errors';
export type * from './types';
