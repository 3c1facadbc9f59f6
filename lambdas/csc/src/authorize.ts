/**
 * The OAuth 2.0 authorization endpoint and its pushed requests (RFC 9126): the client's request checked,
 * the flow's state kept, and the citizen sent to the identity provider.
 */
import { randomUUID } from 'node:crypto';
import {
  approvalRequestOf,
  AUTHORIZATION_PARAMETERS,
  creationApprovalOf,
  authorizingClient,
  flowParams,
  nonceOf,
  parseAuthorizationRequest,
  secretHash,
} from '@pipeline/core/csc';
import { beginLogin, json, redirect, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { CscError } from './errors';
import { authenticateClient, parseBody, randomSecret, seconds } from './request';
import type { CscDoorDeps } from './types';

/**
 * oauth2/authorize: the client and its redirect URI first (a refusal there is answered, not redirected),
 * then the request; the citizen is sent to the identity provider with the nonce of the sign request this
 * authorization will run (and, for a credential, the signature extension showing what is signed).
 */
export async function authorize(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  const params = await authorizationParams(event, deps);
  const { client, redirectUri } = authorizingClient(params, deps.config.clients);
  const state = typeof params.state === 'string' ? params.state : undefined;
  try {
    const request = parseAuthorizationRequest(params, client, redirectUri, randomUUID);
    // A credential authorization's sign request, or a service authorization's credential creation.
    const bound = request.signing ?? request.creation!;
    const login = await beginLogin(deps.login, {
      nonce: nonceOf(bound),
      signature: request.signing ? approvalRequestOf(request.signing) : creationApprovalOf(request.creation!),
    });
    // Until the callback only the checked parameters (parsed again there), not the request made of them.
    await deps.store.putFlow({
      id: login.flowId,
      params: flowParams(params),
      requestId: bound.binding.requestId,
      idpCodeVerifier: login.secret,
      expiresAt: seconds(deps) + deps.config.lifetimes.flowSeconds,
    });
    return redirect(login.location);
  } catch (err) {
    if (err instanceof CscError) return redirectBack(redirectUri, state, err.toJSON());
    throw err;
  }
}

/** How long a pushed authorization request's request_uri lives (RFC 9126 7.3: short). */
const PUSHED_REQUEST_SECONDS = 60;
const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/**
 * oauth2/pushed_authorize (RFC 9126): the client authenticates and posts the authorization request's
 * parameters (form-encoded), which are checked now as oauth2/authorize checks them (a refusal is answered
 * here, in JSON); they are kept under a one-time `request_uri` the client then sends the user agent with.
 * The hashes and authorization_details stay off the URL, and nobody but the client could have set them.
 */
export async function pushedAuthorize(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  const body = parseBody(event);
  const client = authenticateClient(event, body, deps.config);
  if (body.request_uri !== undefined) {
    throw new CscError('invalid_request', 'request_uri is not allowed in a pushed authorization request');
  }
  if (body.client_id !== undefined && body.client_id !== client.clientId) {
    throw new CscError('invalid_request', 'client_id is not the authenticated client');
  }
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(body)) {
    // Only what authorize reads is kept: unknown parameters would only weigh on the table.
    if (!AUTHORIZATION_PARAMETERS.has(name)) continue;
    if (typeof value !== 'string') throw new CscError('invalid_request', `Invalid parameter ${name}`);
    params[name] = value;
  }
  params.client_id = client.clientId;
  const { redirectUri } = authorizingClient(params, [client]);
  parseAuthorizationRequest(params, client, redirectUri, randomUUID);
  const requestUri = `${REQUEST_URI_PREFIX}${randomSecret()}`;
  await deps.store.putPushed(secretHash(requestUri), {
    clientId: client.clientId,
    params,
    expiresAt: seconds(deps) + PUSHED_REQUEST_SECONDS,
  });
  return json(
    201,
    { request_uri: requestUri, expires_in: PUSHED_REQUEST_SECONDS },
    { 'Cache-Control': 'no-store' },
  );
}

/**
 * The authorization request's parameters: the query's, or with `request_uri` those the client pushed
 * (taken once, its own only, unexpired; the query then only names the client, RFC 9126 4).
 */
async function authorizationParams(event: HttpEvent, deps: CscDoorDeps): Promise<Record<string, unknown>> {
  const query = { ...(event.queryStringParameters ?? {}) };
  const requestUri = query.request_uri;
  if (requestUri === undefined) return query;
  if (typeof query.client_id !== 'string' || !requestUri.startsWith(REQUEST_URI_PREFIX)) {
    throw new CscError(
      'invalid_request',
      'request_uri must be one oauth2/pushed_authorize issued, with client_id',
    );
  }
  const pushed = await deps.store.takePushed(secretHash(requestUri), query.client_id, seconds(deps));
  if (!pushed)
    throw new CscError('invalid_request', "request_uri is unknown, used, expired or another client's");
  return { ...pushed.params };
}

/** To the client's registered redirect URI, with its state (RFC 6749 4.1.2). */
export function redirectBack(
  redirectUri: string,
  state: string | undefined,
  params: Record<string, string>,
): HttpResult {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  if (state !== undefined) url.searchParams.set('state', state);
  return redirect(url.toString());
}
