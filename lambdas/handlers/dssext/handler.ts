/**
 * API Gateway -> this function: the DSS-Ext door (@pipeline/dssext, docs/dss-ext.md), wired to its table,
 * the federation's identity providers (its SAML service provider), the pipeline's intake (@pipeline/api,
 * called directly: the API's checks apply unchanged) and the service key that signs its AuthnRequests and
 * SignResponses.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { read, submit } from '@pipeline/api';
import { DssExtRepository } from '@pipeline/adapters/dynamodb';
import { readSecretText } from '@pipeline/adapters/parameters';
import { dssServiceOf, federationOf, pemXmlSigner, SamlServiceProvider } from '@pipeline/adapters/saml';
import { ENV, type DssExtFunctionConfig } from '@pipeline/config';
import { handleDssExtEvent, type DssExtDoorDeps } from '@pipeline/dssext';
import { wireApi } from '../api/handler';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger } from '../shared/observability';
import { wire } from '../shared/wiring';

export interface DssExtHandlerDeps extends DssExtDoorDeps {
  readonly logger: Logger;
}

export type DssExtHandler = LambdaHandler<APIGatewayProxyEvent, APIGatewayProxyResult>;

export function createDssExtHandler(deps: DssExtHandlerDeps): DssExtHandler {
  return lambdaHandler((event: APIGatewayProxyEvent) => handleDssExtEvent(event, deps), deps);
}

/** The door's dependencies from configuration; its service key read from its file or Secrets Manager. */
export async function wireDssExt(functionConfig: DssExtFunctionConfig): Promise<DssExtHandlerDeps> {
  const logger = createLogger('dssext');
  const { dssExt } = functionConfig;
  const { aws } = functionConfig.app;
  const signer = pemXmlSigner(
    await readSecretText(functionConfig.secrets.serviceKey, ENV.DSSEXT_SERVICE_KEY, aws),
  );
  // The e-services submit through this function, not API Gateway: `dss:<SignRequester>`, no API key.
  const { api } = wireApi(functionConfig);
  const { doc } = wire(functionConfig);
  return {
    config: {
      baseUrl: dssExt.baseUrl,
      service: dssServiceOf(dssExt),
      spEntityId: dssExt.sp.entityId,
      defaultLoa: dssExt.defaultLoa,
      flowSeconds: dssExt.flowSeconds,
    },
    store: new DssExtRepository(doc, { tableName: functionConfig.app.tables.dssExt }),
    login: new SamlServiceProvider(
      { ...dssExt.sp, signer, signingCertificateDer: signer.certificates[0]! },
      federationOf(dssExt, aws),
    ),
    intake: { submit: (call) => submit(api, call), read: (call) => read(api, call) },
    responseSigner: signer,
    logger,
  };
}
