export {
  API_STAGE,
  CSC_AUTHORIZE_RESOURCES,
  CSC_BASE_PATH,
  CSC_ROUTES,
  DSSEXT_BASE_PATH,
  DSSEXT_ROUTES,
  MAX_BODY_BYTES,
  OCSP_ROUTES,
  type RouteDefinition,
  ROUTES,
  PKI_SOURCE_LIMITS,
  TSA_RATE_LIMIT,
  TSA_ROUTES,
} from './api';
export { type TableKey, tableName, TABLES } from './definitions';
export { QUEUES, SIGNER_EVENT_SOURCE, SIGNER_TIMEOUT_SECONDS } from './queues';
export { type ScheduleDefinition, SCHEDULES } from './schedules';
export type { KeyAttribute, QueueDefinition, TableDefinition } from './types';
