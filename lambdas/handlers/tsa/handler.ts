/**
 * The time-stamping authority (RFC 3161 3.4, time-stamp protocol via HTTP): `POST /tsa` with an
 * application/timestamp-query body answers an application/timestamp-reply, a token signed by the TSA key
 * in the HSM or a rejection (badAlg, badDataFormat, unacceptedPolicy, timeNotAvailable, ...). The signer
 * invokes the same function with the same event to time-stamp signatures. It logs in as the TSA's own
 * crypto user (TSA_HSM_PIN_SOURCE, TSA_HSM_TOKEN_LABEL): the CA keys are out of its reach.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { TimeStampAuthority } from '@pipeline/ca';
import { timeStampRejection } from '@pipeline/der';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger } from '../shared/observability';
import { derResult, postedDer } from '../shared/binary-http';
import { caSideLogin } from '../shared/ca-login';
import { onceUntilFailure } from '../shared/once';
import type { CaSideFunctionConfig } from '@pipeline/config';

/** A TimeStampReq is about a hundred bytes; anything much larger is not one. */
const MAX_REQUEST_BYTES = 4096;

function reply(status: number, der: Buffer): APIGatewayProxyResult {
  return derResult(status, 'application/timestamp-reply', der);
}

export interface TsaHandlerDeps {
  /** The TSA, set up on first use (its HSM login, the CA certificates); retried after a failure. */
  readonly authority: () => Promise<TimeStampAuthority>;
  readonly logger: Logger;
}

async function setUp(functionConfig: CaSideFunctionConfig): Promise<TimeStampAuthority> {
  const { hsm, caCertificates, config } = await caSideLogin(functionConfig, (ca) => ({
    pinSource: ca.tsaPinSource,
    tokenLabel: ca.tsaTokenLabel,
  }));
  return TimeStampAuthority.create({ hsm, caCertificates, config });
}

export function createTsaHandler({
  authority,
  logger,
}: TsaHandlerDeps): LambdaHandler<APIGatewayProxyEvent, APIGatewayProxyResult> {
  return lambdaHandler(
    async (event: APIGatewayProxyEvent) => {
      const query = postedDer(event, MAX_REQUEST_BYTES);
      if (!query) return reply(400, timeStampRejection('badDataFormat', 'POST one DER TimeStampReq'));
      const type = Object.entries(event.headers ?? {}).find(([k]) => k.toLowerCase() === 'content-type')?.[1];
      if (type && type.split(';')[0].trim().toLowerCase() !== 'application/timestamp-query') {
        return reply(
          415,
          timeStampRejection('badDataFormat', 'Content-Type must be application/timestamp-query'),
        );
      }
      try {
        const result = await (await authority()).respond(query);
        if (!result.granted) logger.info('time-stamp refused', { failure: result.failure });
        return reply(200, result.der);
      } catch (err) {
        logger.error('time-stamp request failed', { errorName: (err as Error)?.name });
        return reply(503, timeStampRejection('systemFailure', 'the TSA cannot sign now'));
      }
    },
    { logger },
  );
}

/** The TSA's dependencies from configuration: set up lazily, once per execution environment. */
export function wireTsa(config: CaSideFunctionConfig): TsaHandlerDeps {
  return { authority: onceUntilFailure(() => setUp(config)), logger: createLogger('tsa') };
}
