/**
 * The Cloud Signature Consortium API v2 (docs/csc.md): its OAuth 2.0 authorization server (authorize,
 * the identity provider's callback, token), the one-time credentials, and signatures/signHash, which
 * submits the authorized hash to the pipeline through the API's own intake (the stored ID token as the
 * identity assertion, so the API's and the CA's checks apply unchanged). Every refusal is
 * `{ error, error_description }` (CscError; the pipeline's codes mapped by cscErrorFor).
 */
import { createPrivateKey, randomBytes, randomUUID, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { handleApiEvent } from '@pipeline/api';
import { CscRepository } from '@pipeline/adapters/dynamodb';
import { createAssertionVerifier, OidcRelyingParty } from '@pipeline/adapters/oidc';
import { readSecretText } from '@pipeline/adapters/parameters';
import {
  ConfigError,
  cscSecretSources,
  ENV,
  loadConfig,
  loadCscConfig,
  loadIdentityConfig,
  type CscConfig,
} from '@pipeline/config';
import {
  AssertionError,
  authorizingClient,
  checkSignAlgo,
  clientSecretMatches,
  credentialById,
  credentialInfo,
  CSC_CREDENTIALS,
  CscError,
  cscErrorFor,
  cscInfo,
  digestAlgorithmOf,
  digestOf,
  expectedApproval,
  grantOf,
  nonceOf,
  parseAuthorizationRequest,
  pkceMatches,
  secretHash,
  type AssertionVerifier,
  type CscGrant,
  type CscStore,
  type TokenUse,
} from '@pipeline/core';
import { CSC_BASE_PATH, TABLES, tableName } from '@pipeline/resources';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { createLogger } from '../shared/observability';
import { wireApi } from '../api/handler';
import { wire } from '../shared/wiring';

type Event = APIGatewayProxyEvent;
type Result = APIGatewayProxyResult;

export interface CscHandlerDeps {
  readonly config: CscConfig;
  readonly store: CscStore;
  readonly verifier: AssertionVerifier;
  readonly relyingParty: Pick<OidcRelyingParty, 'authorizationUrl' | 'exchangeCode'>;
  /** The pipeline's intake: the API function's handling of `POST /sign-requests`. */
  readonly submit: (event: Event) => Promise<Result>;
  readonly logger: Logger;
  /** Epoch ms (tests move it). */
  readonly now?: () => number;
}

export type CscHandler = LambdaHandler<Event, Result>;

export function createCscHandler(deps: CscHandlerDeps): CscHandler {
  return lambdaHandler(async (event: Event) => {
    try {
      return await route(event, deps);
    } catch (err) {
      if (err instanceof CscError) return refusal(err);
      deps.logger.error('unexpected CSC failure', {
        errorName: (err as Error)?.name,
        stack: (err as Error)?.stack,
      });
      return refusal(new CscError('server_error', 'internal error'));
    }
  }, deps);
}

async function route(event: Event, deps: CscHandlerDeps): Promise<Result> {
  const resource = event.resource.startsWith(CSC_BASE_PATH)
    ? event.resource.slice(CSC_BASE_PATH.length)
    : event.resource;
  switch (`${event.httpMethod} ${resource}`) {
    case 'GET /info':
    case 'POST /info':
      return json(200, cscInfo(deps.config.service));
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
      return signHash(event, deps);
    default:
      throw new CscError('not_found', 'no such CSC method');
  }
}

const seconds = (deps: CscHandlerDeps): number => Math.floor((deps.now ?? Date.now)() / 1000);
const randomSecret = (): string => randomBytes(32).toString('base64url');

/**
 * oauth2/authorize: the client and its redirect URI first (a refusal there is answered, not redirected),
 * then the request; the citizen is sent to the identity provider with the nonce of the sign request this
 * authorization will run (and, for a credential, the signature extension showing what is signed).
 */
async function authorize(event: Event, deps: CscHandlerDeps): Promise<Result> {
  const params = { ...(event.queryStringParameters ?? {}) };
  const { client, redirectUri } = authorizingClient(params, deps.config.clients);
  const state = typeof params.state === 'string' ? params.state : undefined;
  try {
    const request = parseAuthorizationRequest(params, client, redirectUri, randomUUID);
    const pkce = OidcRelyingParty.pkce();
    const id = randomSecret();
    const nonce = request.signing ? nonceOf(request.signing) : randomSecret();
    await deps.store.putFlow({
      id,
      request,
      idpCodeVerifier: pkce.verifier,
      nonce,
      expiresAt: seconds(deps) + deps.config.lifetimes.flowSeconds,
    });
    const location = await deps.relyingParty.authorizationUrl({
      state: id,
      nonce,
      codeChallenge: pkce.challenge,
      ...(request.signing
        ? {
            signature: {
              tbsData: request.signing.binding.digest,
              signMessage: request.signing.signMessage,
            },
          }
        : {}),
    });
    return redirect(location);
  } catch (err) {
    if (err instanceof CscError) return redirectBack(redirectUri, state, err.toJSON());
    throw err;
  }
}

/**
 * The identity provider's answer: the flow is taken once; the code is exchanged and the ID token
 * verified as the API verifies it (issuer, keys, audience, level of assurance, a fresh login, the nonce
 * of the bound sign request and, for a credential, the provider's approval of the sign message for that
 * digest). Only then does the client get a code.
 */
async function callback(event: Event, deps: CscHandlerDeps): Promise<Result> {
  const q = event.queryStringParameters ?? {};
  const flow = typeof q.state === 'string' ? await deps.store.takeFlow(q.state, seconds(deps)) : undefined;
  if (!flow) throw new CscError('invalid_request', 'unknown, used or expired authorization (state)');
  const { request } = flow;
  const back = (params: Record<string, string>): Result =>
    redirectBack(request.redirectUri, request.state, params);
  if (q.error !== undefined || typeof q.code !== 'string') {
    return back({
      error: 'access_denied',
      error_description: 'the citizen did not log in or did not approve',
    });
  }
  let idToken: string;
  try {
    idToken = await deps.relyingParty.exchangeCode(q.code, flow.idpCodeVerifier);
    await deps.verifier.verify(
      idToken,
      flow.nonce,
      request.signing ? { approval: expectedApproval(request.signing.binding) } : undefined,
    );
  } catch (err) {
    if (!(err instanceof AssertionError)) {
      deps.logger.warn('identity provider unavailable for a CSC authorization', {
        errorName: (err as Error)?.name,
      });
      return back({ error: 'temporarily_unavailable', error_description: 'the identity provider failed' });
    }
    // The code only: never the token or what it says about the citizen.
    deps.logger.warn('identity assertion refused', { code: err.code, cscClient: request.clientId });
    return back({ error: cscErrorFor(err.code), error_description: err.message });
  }
  const code = randomSecret();
  const expiresAt = seconds(deps) + deps.config.lifetimes.codeSeconds;
  await deps.store.putCode(
    secretHash(code),
    grantOf(request, request.signing ? idToken : undefined, expiresAt),
  );
  return back({ code });
}

/**
 * oauth2/token (authorization_code): the client authenticates (client_secret_basic or
 * client_secret_post), the code is redeemed once by its own client, the PKCE verifier must match; the
 * access token (for a credential: the signature activation data) is stored by its hash.
 */
async function token(event: Event, deps: CscHandlerDeps): Promise<Result> {
  const body = parseBody(event);
  const client = authenticateClient(event, body, deps.config);
  if (body.grant_type !== 'authorization_code') {
    throw new CscError('unsupported_grant_type', 'grant_type must be authorization_code');
  }
  if (typeof body.code !== 'string' || body.code.length > 256) {
    throw new CscError('invalid_request', 'code is required');
  }
  const redeemed = await deps.store.redeemCode(secretHash(body.code), client.clientId, seconds(deps));
  if (redeemed === undefined || redeemed === 'other-client') {
    throw new CscError('invalid_grant', 'the code is unknown, used, expired or was issued to another client');
  }
  if (body.redirect_uri !== undefined && body.redirect_uri !== redeemed.redirectUri) {
    throw new CscError('invalid_grant', 'redirect_uri differs from the authorization request');
  }
  if (!pkceMatches(body.code_verifier, redeemed.codeChallenge)) {
    throw new CscError('invalid_grant', 'the PKCE code_verifier does not match the code_challenge');
  }
  const accessToken = randomSecret();
  const ttl = deps.config.lifetimes.accessTokenSeconds;
  const { redirectUri: _r, codeChallenge: _c, ...rest } = redeemed;
  const grant: CscGrant = { ...rest, expiresAt: seconds(deps) + ttl };
  await deps.store.putToken(secretHash(accessToken), grant);
  return json(
    200,
    {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: ttl,
      scope: grant.scope,
      ...(grant.signing ? { credentialID: grant.signing.credentialID } : {}),
    },
    { 'Cache-Control': 'no-store' },
  );
}

async function credentialsList(event: Event, deps: CscHandlerDeps): Promise<Result> {
  await grantOfBearer(event, deps, ['service']);
  const body = parseBody(event);
  return json(200, {
    credentialIDs: CSC_CREDENTIALS.map((c) => c.credentialID),
    ...(body.credentialInfo === true
      ? {
          credentialInfos: CSC_CREDENTIALS.map((c) => ({
            credentialID: c.credentialID,
            ...credentialInfo(c),
          })),
        }
      : {}),
  });
}

async function credentialsInfo(event: Event, deps: CscHandlerDeps): Promise<Result> {
  await grantOfBearer(event, deps, ['service', 'credential']);
  const body = parseBody(event);
  return json(200, credentialInfo(credentialById(body.credentialID)));
}

/**
 * signatures/signHash (operation mode S): the credential token's hashes, exactly as authorized, signed
 * by the pipeline. The token is used once (a conditional write) before the sign request is submitted.
 */
async function signHash(event: Event, deps: CscHandlerDeps): Promise<Result> {
  const tokenHash = bearerHash(event);
  const grant = await grantOfBearer(event, deps, ['credential']);
  const signing = grant.signing!;
  const body = parseBody(event);
  const credential = credentialById(body.credentialID);
  if (credential.credentialID !== signing.credentialID) {
    throw new CscError('invalid_request', 'credentialID is not the authorized credential');
  }
  if ((body.operationMode ?? 'S') !== 'S') {
    throw new CscError('invalid_request', 'operationMode must be S (synchronous)');
  }
  const digestAlgorithm = digestAlgorithmOf(body.hashAlgorithmOID);
  const hashes = Array.isArray(body.hashes) ? body.hashes : [];
  if (
    digestAlgorithm !== signing.binding.digestAlgorithm ||
    hashes.length !== signing.numSignatures ||
    hashes.some((h) => digestOf(h, digestAlgorithm, 'hashes') !== signing.binding.digest)
  ) {
    throw new CscError('invalid_request', 'hashes are not the hashes this access token authorizes');
  }
  checkSignAlgo(credential, body.signAlgo, digestAlgorithm);
  const used = await deps.store.useToken(tokenHash, seconds(deps));
  if (!used.ok) throw tokenRefusal(used);
  // What the token says at the moment of its use: the sign request the citizen's login must bind.
  const { binding, signMessage } = used.grant.signing!;
  const submitted = await deps.submit(
    intakeEvent(event, grant.clientId, deps.config.signWaitSeconds, {
      requestId: binding.requestId,
      digest: binding.digest,
      digestAlgorithm: binding.digestAlgorithm,
      keyType: binding.keyType,
      signatureAlgorithm: binding.signatureAlgorithm,
      format: 'raw',
      signMessage,
      identityAssertion: used.grant.idToken,
    }),
  );
  const result = JSON.parse(submitted.body || '{}') as {
    status?: string;
    signature?: string;
    error?: { code?: string; message?: string };
  };
  if (submitted.statusCode === 200 && result.status === 'signed' && typeof result.signature === 'string') {
    return json(200, { signatures: [result.signature] });
  }
  if (result.error?.code) {
    throw new CscError(cscErrorFor(result.error.code), result.error.message ?? result.error.code);
  }
  throw new CscError('server_error', 'the signature was not made within the wait');
}

/** The sign request as the API receives it, from the CSC client (`csc:<clientId>`), waiting for its end. */
function intakeEvent(
  event: Event,
  clientId: string,
  waitSeconds: number,
  body: Record<string, unknown>,
): Event {
  return {
    ...event,
    resource: '/sign-requests',
    path: '/sign-requests',
    httpMethod: 'POST',
    headers: { 'content-type': 'application/json' },
    multiValueHeaders: {},
    queryStringParameters: { wait: String(waitSeconds) },
    multiValueQueryStringParameters: null,
    pathParameters: null,
    body: JSON.stringify(body),
    isBase64Encoded: false,
    requestContext: {
      ...event.requestContext,
      resourcePath: '/sign-requests',
      httpMethod: 'POST',
      identity: { ...event.requestContext?.identity, apiKeyId: null, userArn: `csc:${clientId}` },
    } as Event['requestContext'],
  };
}

function bearerHash(event: Event): string {
  const header = headerOf(event, 'authorization') ?? '';
  const found = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(header);
  if (!found) throw new CscError('invalid_token', 'an access token (Authorization: Bearer) is required');
  return secretHash(found[1]);
}

async function grantOfBearer(
  event: Event,
  deps: CscHandlerDeps,
  scopes: readonly CscGrant['scope'][],
): Promise<CscGrant> {
  const read = await deps.store.getToken(bearerHash(event), seconds(deps));
  if (!read.ok) throw tokenRefusal(read);
  if (!scopes.includes(read.grant.scope)) {
    throw new CscError(
      'insufficient_scope',
      `this method needs an access token of scope ${scopes.join(' or ')}`,
    );
  }
  return read.grant;
}

function tokenRefusal(use: Extract<TokenUse, { ok: false }>): CscError {
  const why = { unknown: 'unknown', used: 'already used', expired: 'expired' }[use.reason];
  return new CscError('invalid_token', `the access token is ${why}`);
}

/** client_secret_basic (RFC 6749 2.3.1, form-encoded id and secret) or client_secret_post. */
function authenticateClient(event: Event, body: Record<string, unknown>, config: CscConfig) {
  const header = headerOf(event, 'authorization');
  let id: unknown = body.client_id;
  let secret: unknown = body.client_secret;
  if (header !== undefined) {
    const basic = /^Basic ([A-Za-z0-9+/]+=*)$/.exec(header);
    const decoded = basic ? Buffer.from(basic[1], 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new CscError('invalid_client', 'client authentication failed');
    try {
      id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    } catch {
      throw new CscError('invalid_client', 'client authentication failed');
    }
  }
  const client = config.clients.find((c) => c.clientId === id);
  if (!client || !clientSecretMatches(client, secret)) {
    throw new CscError('invalid_client', 'client authentication failed');
  }
  return client;
}

function headerOf(event: Event, name: string): string | undefined {
  const entry = Object.entries(event.headers ?? {}).find(([k]) => k.toLowerCase() === name);
  return entry?.[1] ?? undefined;
}

/** A JSON body, or a form (oauth2/token's usual encoding). */
function parseBody(event: Event): Record<string, unknown> {
  if (!event.body) return {};
  const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if ((headerOf(event, 'content-type') ?? '').startsWith('application/x-www-form-urlencoded')) {
    return Object.fromEntries(new URLSearchParams(text));
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new CscError('invalid_request', 'the body is not a JSON object');
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Result {
  return {
    statusCode: status,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

function refusal(err: CscError): Result {
  return json(
    err.status,
    err.toJSON(),
    err.code === 'invalid_client' ? { 'WWW-Authenticate': 'Basic realm="csc"' } : {},
  );
}

function redirect(location: string): Result {
  return { statusCode: 302, headers: { Location: location, 'Cache-Control': 'no-store' }, body: '' };
}

/** To the client's registered redirect URI, with its state (RFC 6749 4.1.2). */
function redirectBack(
  redirectUri: string,
  state: string | undefined,
  params: Record<string, string>,
): Result {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  if (state !== undefined) url.searchParams.set('state', state);
  return redirect(url.toString());
}

/**
 * The CSC function's dependencies from configuration: its table, the identity provider, the pipeline's
 * intake; its secrets (the key at the provider, the clients when CSC_CLIENTS names a secret) read from
 * their files or Secrets Manager.
 */
export async function wireCsc(): Promise<CscHandlerDeps> {
  const logger = createLogger('csc');
  const identity = loadIdentityConfig();
  const { aws } = loadConfig();
  const sources = cscSecretSources(process.env);
  const [clientsText, keyText] = await Promise.all([
    sources.clients ? readSecretText(sources.clients, ENV.CSC_CLIENTS, aws) : undefined,
    readSecretText(sources.idpClientKey, ENV.CSC_IDP_CLIENT_KEY, aws),
  ]);
  const config = loadCscConfig(process.env, identity.issuers[0]?.issuer, clientsText);
  const { api } = wireApi();
  // The CSC clients authenticate to this function, not to API Gateway: their sign requests carry
  // `csc:<clientId>` as their client, and no API key.
  const intake = { ...api, settings: { ...api.settings, apiKeyPrincipals: undefined } };
  const { jwk, privateKey } = idpClientKey(keyText);
  const { doc } = wire();
  return {
    config,
    store: new CscRepository(doc, { tableName: tableName(TABLES.csc) }),
    verifier: createAssertionVerifier(identity, aws),
    relyingParty: new OidcRelyingParty({
      issuer: config.idpIssuer,
      clientId: identity.clientId,
      redirectUri: config.idpRedirectUri,
      signingKey: { privateKey, alg: jwk.kty === 'EC' ? (jwk.crv === 'P-384' ? 'ES384' : 'ES256') : 'RS256' },
    }),
    submit: (event) => handleApiEvent(event, intake),
    logger,
  };
}

/** The service's private JWK at the identity provider; an error names the variable, never the key. */
function idpClientKey(text: string): { jwk: JsonWebKey; privateKey: KeyObject } {
  try {
    const jwk = JSON.parse(text) as JsonWebKey;
    return { jwk, privateKey: createPrivateKey({ key: jwk, format: 'jwk' }) };
  } catch {
    throw new ConfigError('CSC_IDP_CLIENT_KEY does not hold a private JWK', ENV.CSC_IDP_CLIENT_KEY);
  }
}
