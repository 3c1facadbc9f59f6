export * from './canonical';
export * from './checkpoint';
export * from './entry';
export * from './errors';
export * from './events';
export * from './key-usage';
export * from './layout';
export type * from './types';
export * from './verifier';
