export * from './errors';
export * from './fluid';
export * from './plan';
export * from './types';
