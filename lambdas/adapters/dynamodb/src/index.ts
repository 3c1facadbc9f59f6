export * from './key-pool-repository';
export * from './request-repository';
export * from './audit-repository';
export * from './batched-request-reader';
export * from './assertion-replay-repository';
export { MAX_TRANSACTION_ITEMS } from './transactions';
