import { registeredClient } from '@pipeline/core/csc';
import { json, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { CscError } from './errors';
import { bearerToken, parseBody, seconds } from './request';
import { signedAnswer } from './results';
import type { CscDoorDeps } from './types';

/**
 * signatures/signPolling (operation mode A): the outcome of an earlier signHash or signDoc, by its
 * `responseID`, for the access token that asked for it (presented again, though used) until the
 * validity_period ends; while the pipeline still works, `invalid_request` saying so (CSC: the previous
 * asynchronous request is not completed yet).
 */
export async function signPolling(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  const accessToken = bearerToken(event);
  const body = parseBody(event);
  const responseID = body.responseID;
  // Sealed under the responseID and the token that asked: another token, or an edited item, opens nothing.
  const pending =
    typeof responseID === 'string' && responseID.length <= 256
      ? await deps.store.getResponse(responseID, accessToken, seconds(deps))
      : undefined;
  if (!pending) {
    throw new CscError(
      'invalid_request',
      'Invalid parameter responseID: unknown, expired or not of this access token',
    );
  }
  registeredClient(pending.clientId, deps.config.clients);
  const read = await deps.intake.read({
    clientId: `csc:${pending.clientId}`,
    id: pending.requestId,
    waitSeconds: 0,
  });
  return (
    signedAnswer(read, pending.method, pending.count, pending.returnValidationInfo) ??
    json(400, {
      error: 'invalid_request',
      error_description: 'the previous asynchronous signature request is not completed yet',
    })
  );
}
