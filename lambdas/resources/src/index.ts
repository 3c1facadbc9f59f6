export * from './api';
export * from './definitions';
export * from './queues';
export * from './schedules';
export type * from './types';
