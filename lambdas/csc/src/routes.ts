/**
 * The CSC door as one function of an API Gateway event: the route (CSC_ROUTES of @pipeline/resources,
 * under CSC_BASE_PATH) to its method; every refusal in the CSC error shape.
 */
import { cscErrorOf, cscInfo } from '@pipeline/core/csc';
import { clientFailureOf } from '@pipeline/core/shared';
import { json, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { CSC_BASE_PATH } from '@pipeline/resources';
import { authorize, pushedAuthorize } from './authorize';
import { callback } from './callback';
import { credentialsInfo, credentialsList } from './credentials';
import { CscError, refusal } from './errors';
import { signPolling } from './polling';
import { sign } from './signatures';
import { timestamp } from './timestamp';
import { token } from './token';
import type { CscDoorDeps } from './types';

export async function handleCscEvent(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  try {
    return await route(event, deps);
  } catch (err) {
    // Its own OAuth refusals as they are; anything else through the service's one mapping (cscErrorOf).
    if (!(err instanceof CscError) && clientFailureOf(err).kind === 'internal') {
      deps.logger.error('unexpected CSC failure', {
        errorName: (err as Error)?.name,
        stack: (err as Error)?.stack,
      });
    }
    return refusal(cscErrorOf(err));
  }
}

function route(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> | HttpResult {
  const resource = event.resource.startsWith(CSC_BASE_PATH)
    ? event.resource.slice(CSC_BASE_PATH.length)
    : event.resource;
  switch (`${event.httpMethod} ${resource}`) {
    case 'GET /info':
    case 'POST /info':
      return json(200, cscInfo(deps.config.service));
    case 'POST /oauth2/pushed_authorize':
      return pushedAuthorize(event, deps);
    case 'GET /oauth2/authorize':
      return authorize(event, deps);
    case 'GET /oauth2/callback':
      return callback(event, deps);
    case 'POST /oauth2/token':
      return token(event, deps);
    case 'POST /credentials/list':
      return credentialsList(event, deps);
    case 'POST /credentials/info':
      return credentialsInfo(event, deps);
    case 'POST /signatures/signHash':
      return sign(event, deps, 'signHash');
    case 'POST /signatures/signDoc':
      return sign(event, deps, 'signDoc');
    case 'POST /signatures/signPolling':
      return signPolling(event, deps);
    case 'POST /signatures/timestamp':
      return timestamp(event, deps);
    default:
      throw new CscError('not_found', 'no such CSC method');
  }
}
