/**
 * Tables and queues in the local stand-ins (DynamoDB Local, ElasticMQ), from the one definition in
 * lambdas/resources that the CDK app deploys on AWS.
 */
export { ensureTables } from './tables';
export { createTestTables } from './test-tables';
export { ensureQueue } from './queues';
