/**
 * API Gateway -> this function: the Cloud Signature Consortium API v2 door (@pipeline/csc, docs/csc.md),
 * wired to its table, the identity provider the citizens log in at, the pipeline's intake (@pipeline/api,
 * called directly: the API's checks apply unchanged) and the service's TSA.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { read, submit } from '@pipeline/api';
import { lambdaClient } from '@pipeline/adapters/aws';
import { CscRepository } from '@pipeline/adapters/dynamodb';
import { OidcRelyingParty } from '@pipeline/adapters/oidc';
import { readSecretText } from '@pipeline/adapters/parameters';
import { ENV, type CscConfig, type CscFunctionConfig } from '@pipeline/config';
import { handleCscEvent, type CscDoorDeps } from '@pipeline/csc';
import { wireApi } from '../api/handler';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger } from '../shared/observability';
import { oidcLogin, relyingPartyKey } from '../shared/oidc-login';
import { createTimeStamper } from '../shared/time-stamping';
import { wire } from '../shared/wiring';
import { createEvidenceVerifier } from '../shared/evidence';

export interface CscHandlerDeps extends CscDoorDeps {
  readonly config: CscConfig;
  readonly logger: Logger;
}

export type CscHandler = LambdaHandler<APIGatewayProxyEvent, APIGatewayProxyResult>;

export function createCscHandler(deps: CscHandlerDeps): CscHandler {
  return lambdaHandler((event: APIGatewayProxyEvent) => handleCscEvent(event, deps), deps);
}

/**
 * The CSC function's dependencies from configuration: its table, the identity provider, the pipeline's
 * intake; its secrets (the key at the provider, the clients when CSC_CLIENTS names a secret) read from
 * their files or Secrets Manager.
 */
export async function wireCsc(functionConfig: CscFunctionConfig): Promise<CscHandlerDeps> {
  const logger = createLogger('csc');
  const { identity } = functionConfig;
  const { aws } = functionConfig.app;
  const sources = functionConfig.secrets;
  const [clientsText, keyText] = await Promise.all([
    sources.clients ? readSecretText(sources.clients, ENV.CSC_CLIENTS, aws) : undefined,
    readSecretText(sources.idpClientKey, ENV.CSC_IDP_CLIENT_KEY, aws),
  ]);
  const config = functionConfig.csc(clientsText);
  // The CSC clients authenticate to this function, not to API Gateway: their sign requests carry
  // `csc:<clientId>` as their client, and no API key.
  const { api } = wireApi(functionConfig);
  const { doc, pipeline } = wire(functionConfig);
  const relyingParty = new OidcRelyingParty({
    issuer: config.idpIssuer,
    clientId: identity.clientId,
    redirectUri: config.idpRedirectUri,
    signingKey: relyingPartyKey(keyText, ENV.CSC_IDP_CLIENT_KEY),
  });
  return {
    config,
    store: new CscRepository(doc, { tableName: functionConfig.app.tables.csc }),
    verifier: createEvidenceVerifier(identity, aws),
    login: oidcLogin(relyingParty),
    intake: { submit: (call) => submit(api, call), read: (call) => read(api, call) },
    timeStamper: createTimeStamper(pipeline.timeStamping, lambdaClient(aws)),
    logger,
  };
}
