/**
 * The OCSP responder (RFC 6960 appendix A): `POST /ocsp` with an application/ocsp-request body, or
 * `GET /ocsp/{base64 request}`. Always answers an OCSPResponse: good / revoked / unknown per certificate,
 * signed by the delegated responder key in the HSM (once per certificate state: see OcspResponder);
 * malformedRequest for what does not parse or names more than one certificate; unauthorized for serials
 * this CA never issued; internalError
 * (unsigned, not cached) when the records or the HSM cannot be reached. It logs in as the OCSP responder's
 * own crypto user (OCSP_HSM_PIN_SOURCE, OCSP_HSM_TOKEN_LABEL): the CA keys are out of its reach.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { documentClient } from '@pipeline/adapters/aws';
import { CertificateRepository } from '@pipeline/adapters/dynamodb';
import { pkiPublisher } from '@pipeline/adapters/publish';
import { OcspResponder } from '@pipeline/ca';
import { ocspErrorResponse } from '@pipeline/der';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger } from '../shared/observability';
import { derResult, postedDer } from '../shared/binary-http';
import { caSideLogin } from '../shared/ca-login';
import { onceUntilFailure } from '../shared/once';
import type { CaSideFunctionConfig } from '@pipeline/config';

/** A GET request is at most a few hundred bytes of base64; POST bodies are capped the same way. */
const MAX_REQUEST_BYTES = 8192;

function answer(der: Buffer, maxAgeSeconds: number): APIGatewayProxyResult {
  const cacheControl = maxAgeSeconds > 0 ? `public, max-age=${maxAgeSeconds}` : 'no-store';
  return derResult(200, 'application/ocsp-response', der, cacheControl);
}

/** The DER request from either binding; undefined when the HTTP request carries none. */
function ocspRequestOf(event: APIGatewayProxyEvent): Buffer | undefined {
  if (event.httpMethod === 'POST') return postedDer(event, MAX_REQUEST_BYTES);
  const encoded = event.pathParameters?.request;
  if (event.httpMethod !== 'GET' || !encoded || encoded.length > MAX_REQUEST_BYTES * 2) return undefined;
  // RFC 6960 A.1: base64 then URL-encoding; base64url is accepted too.
  let text: string;
  try {
    text = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined;
  return Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

export interface OcspService {
  readonly responder: OcspResponder;
  /** How long a GET answer may be cached. */
  readonly maxAgeSeconds: number;
}

export interface OcspHandlerDeps {
  /** The responder, set up on first use (its HSM login, the CA certificates); retried after a failure. */
  readonly service: () => Promise<OcspService>;
  readonly logger: Logger;
}

async function setUp(functionConfig: CaSideFunctionConfig): Promise<OcspService> {
  const { hsm, caCertificates, config, aws } = await caSideLogin(functionConfig, (ca) => ({
    pinSource: ca.ocspPinSource,
    tokenLabel: ca.ocspTokenLabel,
  }));
  const publisher = pkiPublisher(config.publishTarget, aws);
  const responder = await OcspResponder.create({
    hsm,
    store: new CertificateRepository(documentClient(aws), {
      tableName: functionConfig.app.tables.certificates,
    }),
    caCertificates,
    config,
    publishedCrl: () => publisher.read('issuing.crl'),
  });
  return { responder, maxAgeSeconds: Math.min(300, config.ocspResponseValiditySeconds) };
}

export function createOcspHandler({
  service,
  logger,
}: OcspHandlerDeps): LambdaHandler<APIGatewayProxyEvent, APIGatewayProxyResult> {
  return lambdaHandler(
    async (event: APIGatewayProxyEvent) => {
      const request = ocspRequestOf(event);
      if (!request) return answer(ocspErrorResponse('malformedRequest'), 0);
      try {
        const { responder, maxAgeSeconds } = await service();
        // GET answers may be cached (that is what the GET binding is for); POST ones carry a nonce usually.
        return answer((await responder.respond(request)).der, event.httpMethod === 'GET' ? maxAgeSeconds : 0);
      } catch (err) {
        logger.error('OCSP request failed', { errorName: (err as Error)?.name });
        return answer(ocspErrorResponse('internalError'), 0);
      }
    },
    { logger },
  );
}

/** The responder's dependencies from configuration: set up lazily, once per execution environment. */
export function wireOcsp(config: CaSideFunctionConfig): OcspHandlerDeps {
  return { service: onceUntilFailure(() => setUp(config)), logger: createLogger('ocsp') };
}
