/**
 * What handlers share: configuration, SDK clients and repositories, each created once
 * per execution environment (module scope, outside the handler) so provisioned concurrency keeps them
 * warm. The same code runs on AWS, on LocalStack and in the local runner: only configuration differs.
 */
import { documentClient, sqsClient, type DynamoDBDocumentClient } from '@pipeline/adapters/aws';
import { KeyPoolRepository, RequestRepository } from '@pipeline/adapters/dynamodb';
import { SqsRequestQueue } from '@pipeline/adapters/sqs';
import {
  loadConfig,
  loadPipelineConfig,
  loadPoolConfig,
  loadRequestsConfig,
  type AppConfig,
  type PipelineConfig,
} from '@pipeline/config';
import type { PoolConfig, RequestsConfig } from '@pipeline/config';
import { TABLES, tableName } from '@pipeline/resources';

export interface Wiring {
  readonly config: AppConfig;
  readonly pipeline: PipelineConfig;
  readonly pool: PoolConfig;
  readonly requestsConfig: RequestsConfig;
  /** The one DynamoDB client of the environment: every repository shares its connections. */
  readonly doc: DynamoDBDocumentClient;
  readonly requests: RequestRepository;
  readonly keyPool: KeyPoolRepository;
  readonly queue: SqsRequestQueue;
}

let wiring: Wiring | undefined;

export function wire(): Wiring {
  if (wiring) return wiring;
  const config = loadConfig();
  const pool = loadPoolConfig();
  const doc = documentClient(config.aws);
  const pipeline = loadPipelineConfig();
  wiring = {
    config,
    pipeline,
    pool,
    requestsConfig: loadRequestsConfig(),
    doc,
    requests: new RequestRepository(doc, { tableName: tableName(TABLES.requests) }),
    keyPool: new KeyPoolRepository(doc, {
      tableName: tableName(TABLES.keyPool),
      shards: pool.shards,
      bundleSize: pool.bundleSize,
    }),
    queue: new SqsRequestQueue(sqsClient(config.aws), pipeline.queueUrl),
  };
  return wiring;
}
