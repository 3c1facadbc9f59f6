/**
 * API Gateway -> this function: accepts sign requests, serves results (long-poll) and health. The
 * request path does no HSM work: it validates, writes the record and queues the id.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { SignRequestAdmission, handleApiEvent, type ApiDeps } from '@pipeline/api';
import {
  AssertionReplayRepository,
  BatchedRequestReader,
  BufferedDemandRecorder,
  DemandRepository,
} from '@pipeline/adapters/dynamodb';
import { lambdaClient } from '@pipeline/adapters/aws';
import { LambdaCertificateRevoker } from '@pipeline/adapters/lambda';
import type { ApiFunctionConfig } from '@pipeline/config';
import { KEY_TYPES } from '@pipeline/core/shared';
import { createLogger } from '../shared/observability';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { wire } from '../shared/wiring';
import { createEvidenceVerifier } from '../shared/evidence';

export interface ApiHandlerDeps {
  readonly api: ApiDeps;
  readonly logger: Logger;
}

export type ApiHandler = LambdaHandler<APIGatewayProxyEvent, APIGatewayProxyResult>;

export function createApiHandler({ api, logger }: ApiHandlerDeps): ApiHandler {
  return lambdaHandler(
    (event: APIGatewayProxyEvent) =>
      handleApiEvent(event, api, (err) =>
        // Name and stack only: the error may come from anywhere, its message is not trusted to be clean.
        logger.error('unexpected API failure', {
          errorName: (err as Error)?.name,
          stack: (err as Error)?.stack,
        }),
      ),
    { logger },
  );
}

/** The API's dependencies from configuration (the environment): tables, queue, identity, revocation. */
export function wireApi(functionConfig: ApiFunctionConfig): ApiHandlerDeps {
  const logger = createLogger('api');
  const { doc, requests, keyPool, queue, pool, pipeline, requestsConfig, config } = wire(functionConfig);
  const { identity } = functionConfig;
  // Said at every start: a client that vouches for signers itself is a deliberate, visible exception.
  if (identity.clientKeys.length > 0) {
    logger.warn('clients with registered keys may vouch for signers in request objects', {
      identityMode: identity.mode,
      trustedClients: identity.clientKeys.map((c) => c.client),
    });
  } else {
    logger.info('signer identities come from identity assertions only', {
      trustedIssuers: identity.issuers.map((i) => i.issuer),
    });
  }
  // Demand counted in memory, written per key type and hour every few seconds: one table write fewer per request.
  const demand = new BufferedDemandRecorder(new DemandRepository(doc, { tableName: config.tables.demand }), {
    maxDelayMs: pipeline.demandFlushMs,
    maxPending: pipeline.demandFlushPending,
  });
  // Reads for all waiting clients of this process go out together (see BatchedRequestReader).
  const reader = new BatchedRequestReader(doc, { tableName: config.tables.requests });
  // Admission by key supply and per-client share: the counters of the type asked for and the open
  // requests, read at most once a second by this environment.
  const admission = new SignRequestAdmission(
    {
      available: async (keyType) => (await keyPool.available([keyType]))[keyType] ?? 0,
      openCounts: () => requests.openCounts(),
    },
    { policy: pool.emptyPolicy, onTheFly: pool.admissionOnTheFly, clientReserve: pool.clientReserve },
  );
  const api: ApiDeps = {
    requests: {
      create: (record) => requests.create(record),
      // A signed request with documents: its results, from their own items.
      get: (id) => reader.get(id).then((record) => record && requests.withDocumentResults(record)),
      discard: (id) => requests.discard(id),
    },
    queue,
    pool: { available: () => keyPool.available(KEY_TYPES) },
    admission,
    recordDemand: (keyType, at) => demand.record(keyType, at),
    identity: {
      verifier: createEvidenceVerifier(identity, config.aws),
      assertions: new AssertionReplayRepository(doc, { tableName: config.tables.assertions }),
    },
    revoker: new LambdaCertificateRevoker(lambdaClient(config.aws), pipeline.revokeFunctionName),
    // The code and the ids only: never the token or what it says about the citizen.
    onAssertionRefused: (code, context) => logger.warn('identity assertion refused', { code, ...context }),
    settings: {
      maxBodyBytes: pipeline.maxBodyBytes,
      retentionSeconds: requestsConfig.retentionSeconds,
      rejectWhenPoolEmpty: pool.emptyPolicy === 'reject',
      retryAfterSeconds: pool.retryAfterSeconds,
      apiKeyPrincipals: pipeline.apiKeyPrincipals,
    },
  };
  return { api, logger };
}
