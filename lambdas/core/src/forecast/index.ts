export * from './errors';
export * from './forecast';
export * from './holt-winters';
export * from './profile';
export * from './types';
