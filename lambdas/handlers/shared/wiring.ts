/**
 * What the queue-and-pool handlers share: SDK clients and repositories made from their configuration.
 * The entry point wires once per execution environment (module scope, outside the handler) so
 * provisioned concurrency keeps them warm. The same code runs on AWS, on LocalStack and in the local
 * runner: only the configuration value differs.
 */
import { documentClient, sqsClient, type DynamoDBDocumentClient } from '@pipeline/adapters/aws';
import { KeyPoolRepository, RequestRepository } from '@pipeline/adapters/dynamodb';
import { SqsRequestQueue } from '@pipeline/adapters/sqs';
import type { AppConfig, PipelineConfig, QueueFunctionConfig } from '@pipeline/config';
import type { PoolConfig, RequestsConfig } from '@pipeline/config';

export interface Wiring {
  readonly config: AppConfig;
  readonly pipeline: PipelineConfig;
  readonly pool: PoolConfig;
  readonly requestsConfig: RequestsConfig;
  /** The one DynamoDB client of the wiring: every repository shares its connections. */
  readonly doc: DynamoDBDocumentClient;
  readonly requests: RequestRepository;
  readonly keyPool: KeyPoolRepository;
  readonly queue: SqsRequestQueue;
}

export function wire({ app, pipeline }: QueueFunctionConfig): Wiring {
  const doc = documentClient(app.aws);
  return {
    config: app,
    pipeline,
    pool: app.pool,
    requestsConfig: app.requests,
    doc,
    requests: new RequestRepository(doc, { tableName: app.tables.requests }),
    keyPool: new KeyPoolRepository(doc, {
      tableName: app.tables.keyPool,
      shards: app.pool.shards,
      bundleSize: app.pool.bundleSize,
    }),
    queue: new SqsRequestQueue(sqsClient(app.aws), pipeline.queueUrl),
  };
}
