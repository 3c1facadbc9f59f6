export * from './api';
export * from './create-local';
export * from './create-local-queues';
export * from './definitions';
export * from './queues';
export * from './schedules';
export type * from './types';
