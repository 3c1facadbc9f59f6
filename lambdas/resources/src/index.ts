export * from './create-local';
export * from './definitions';
export type * from './types';
