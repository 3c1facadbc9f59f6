export * from './binding';
export * from './claims';
export * from './errors';
export * from './mapping';
export type * from './types';
