/**
 * The DSS-Ext door as one function of an API Gateway event: the route (DSSEXT_ROUTES of
 * @pipeline/resources, under DSSEXT_BASE_PATH) to its step. A request whose origin is not established gets
 * an HTML page and nothing posted; every other refusal is a signed SignResponse (respond.ts).
 */
import { clientFailureOf } from '@pipeline/core/shared';
import { errorPage, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { DssUntrustedRequestError } from '@pipeline/dss';
import { DSSEXT_BASE_PATH } from '@pipeline/resources';
import { acs, flowResult } from './acs';
import { DssDoorPageError } from './errors';
import { sign } from './sign';
import type { DssExtDoorDeps } from './types';

export async function handleDssExtEvent(event: HttpEvent, deps: DssExtDoorDeps): Promise<HttpResult> {
  try {
    return await route(event, deps);
  } catch (err) {
    if (err instanceof DssUntrustedRequestError) {
      deps.logger.warn('SignRequest refused without a response', { code: err.code, reason: err.message });
      return errorPage(400, 'The signature request was refused', err.message);
    }
    if (err instanceof DssDoorPageError)
      return errorPage(err.statusCode, 'The signature cannot go on', err.message);
    const failure = clientFailureOf(err);
    if (failure.kind === 'internal') {
      deps.logger.error('unexpected DSS-Ext failure', {
        errorName: (err as Error)?.name,
        stack: (err as Error)?.stack,
      });
      return errorPage(500, 'Something went wrong', 'The service could not answer; please try again later.');
    }
    return errorPage(failure.status, 'The signature cannot go on', failure.message);
  }
}

function route(event: HttpEvent, deps: DssExtDoorDeps): Promise<HttpResult> | HttpResult {
  const resource = event.resource.startsWith(DSSEXT_BASE_PATH)
    ? event.resource.slice(DSSEXT_BASE_PATH.length)
    : event.resource;
  switch (`${event.httpMethod} ${resource}`) {
    case 'POST /sign':
      return sign(event, deps);
    case 'POST /saml/acs':
      return acs(event, deps);
    case 'GET /flows/{flowId}':
      return flowResult(event.pathParameters?.flowId ?? '', deps);
    case 'GET /saml/metadata':
      return {
        statusCode: 200,
        headers: { 'Content-Type': 'application/samlmetadata+xml', 'Cache-Control': 'max-age=300' },
        body: deps.login.metadataXml(),
      };
    default:
      return errorPage(404, 'Not found', 'no such DSS-Ext resource');
  }
}
