export * from './approval';
export * from './binding';
export * from './claims';
export * from './errors';
export * from './mapping';
export type * from './types';
export * from './sign-message';
