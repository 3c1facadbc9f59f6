/**
 * The Cloud Signature Consortium API v2 (docs/csc.md): its OAuth 2.0 authorization server (authorize,
 * the identity provider's callback, token), the one-time credentials, and signatures/signHash, which
 * submits the authorized hash to the pipeline through the API's own intake (the stored ID token as the
 * identity assertion, so the API's and the CA's checks apply unchanged). Every refusal is
 * `{ error, error_description }` (CscError; the pipeline's codes mapped by cscErrorFor).
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, randomBytes, randomUUID, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { handleApiEvent } from '@pipeline/api';
import { lambdaClient } from '@pipeline/adapters/aws';
import { CscRepository } from '@pipeline/adapters/dynamodb';
import { FunctionTimeStamper, HttpTimeStamper } from '@pipeline/adapters/lambda';
import { createAssertionVerifier, OidcRelyingParty } from '@pipeline/adapters/oidc';
import { readSecretText } from '@pipeline/adapters/parameters';
import { ConfigError, ENV, type CscConfig, type CscFunctionConfig } from '@pipeline/config';
import {
  approvalRequestOf,
  AUTHORIZATION_PARAMETERS,
  authorizedDigests,
  authorizingClient,
  checkSignAlgo,
  clientSecretMatches,
  conformanceLevelOf,
  credentialById,
  credentialInfo,
  CSC_CREDENTIALS,
  CscError,
  cscErrorFor,
  cscInfo,
  digestAlgorithmOf,
  digestOf,
  grantedAuthorizationDetails,
  grantOf,
  nonceOf,
  parseAuthorizationRequest,
  pkceMatches,
  registeredClient,
  registeredRedirect,
  secretHash,
  type CscGrant,
  type CscMethod,
  type CscSigning,
  type CscStore,
  type TokenUse,
} from '@pipeline/core/csc';
import { AssertionError, expectedApproval, type AssertionVerifier } from '@pipeline/core/identity';
import { CSC_BASE_PATH } from '@pipeline/resources';
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
  /** The service's TSA (as the signer reaches it): an RFC 3161 token over a client's hash. */
  readonly timeStamper: Pick<FunctionTimeStamper, 'timeStampHash'>;
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

const seconds = (deps: CscHandlerDeps): number => Math.floor((deps.now ?? Date.now)() / 1000);
const randomSecret = (): string => randomBytes(32).toString('base64url');

/**
 * oauth2/authorize: the client and its redirect URI first (a refusal there is answered, not redirected),
 * then the request; the citizen is sent to the identity provider with the nonce of the sign request this
 * authorization will run (and, for a credential, the signature extension showing what is signed).
 */
async function authorize(event: Event, deps: CscHandlerDeps): Promise<Result> {
  const params = await authorizationParams(event, deps);
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
            signature: approvalRequestOf(request.signing),
          }
        : {}),
    });
    return redirect(location);
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
async function pushedAuthorize(event: Event, deps: CscHandlerDeps): Promise<Result> {
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
async function authorizationParams(event: Event, deps: CscHandlerDeps): Promise<Record<string, unknown>> {
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
  // Never redirect where the table says alone: the URI must still be registered for the flow's client.
  registeredRedirect(request.clientId, request.redirectUri, deps.config.clients);
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
  await deps.store.putCode(code, grantOf(request, request.signing ? idToken : undefined, expiresAt));
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
  const redeemed = await deps.store.redeemCode(body.code, client.clientId, seconds(deps));
  if (redeemed === undefined || redeemed === 'other-client') {
    throw new CscError('invalid_grant', 'the code is unknown, used, expired or was issued to another client');
  }
  // RFC 6749 4.1.3: required when the authorization request had it (the service keeps it only then).
  const sentAtAuthorize = redeemed.redirectUriSent;
  if ((body.redirect_uri !== undefined || sentAtAuthorize) && body.redirect_uri !== redeemed.redirectUri) {
    throw new CscError('invalid_grant', 'redirect_uri differs from the authorization request');
  }
  if (!pkceMatches(body.code_verifier, redeemed.codeChallenge)) {
    throw new CscError('invalid_grant', 'the PKCE code_verifier does not match the code_challenge');
  }
  const accessToken = randomSecret();
  const ttl = deps.config.lifetimes.accessTokenSeconds;
  const { redirectUri: _r, codeChallenge: _c, redirectUriSent: _s, ...rest } = redeemed;
  const grant: CscGrant = { ...rest, expiresAt: seconds(deps) + ttl };
  await deps.store.putToken(accessToken, grant);
  return json(
    200,
    {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: ttl,
      scope: grant.scope,
      ...(grant.signing
        ? {
            credentialID: grant.signing.credentialID,
            authorization_details: grantedAuthorizationDetails(grant.signing),
          }
        : {}),
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
 * signatures/signHash and signatures/signDoc (operation mode S): the credential token's hashes, exactly
 * as authorized and in that order, signed by the pipeline, by the method the token was authorized for.
 * The token is used once (a conditional write) before the sign request is submitted.
 */
async function sign(event: Event, deps: CscHandlerDeps, method: CscMethod): Promise<Result> {
  const accessToken = bearerToken(event);
  const grant = await grantOfBearer(event, deps, ['credential']);
  registeredClient(grant.clientId, deps.config.clients);
  const signing = grant.signing!;
  const body = parseBody(event);
  if (signing.method !== method) {
    throw new CscError(
      'invalid_request',
      `this access token authorizes signatures/${signing.method}, not signatures/${method}`,
    );
  }
  const credential = credentialById(body.credentialID);
  if (credential.credentialID !== signing.credentialID) {
    throw new CscError('invalid_request', 'credentialID is not the authorized credential');
  }
  const mode = body.operationMode ?? 'S';
  if (mode !== 'S' && mode !== 'A') throw new CscError('invalid_request', 'operationMode must be S or A');
  const validity = validityPeriodSeconds(body, mode);
  const asked = method === 'signHash' ? [body] : documentDigestEntries(body, signing);
  const authorized = authorizedDigests(signing);
  const hashes: string[] = [];
  for (const entry of asked) {
    const digestAlgorithm = digestAlgorithmOf(entry.hashAlgorithmOID);
    checkSignAlgo(credential, entry.signAlgo, digestAlgorithm);
    const listed = Array.isArray(entry.hashes) ? (entry.hashes as unknown[]) : [];
    if (digestAlgorithm !== authorizedAlgorithm(signing)) {
      throw new CscError('invalid_request', 'hashAlgorithmOID is not the one this access token authorizes');
    }
    for (const h of listed) hashes.push(digestOf(h, digestAlgorithm, 'hashes'));
  }
  if (hashes.length !== authorized.length || hashes.some((h, i) => h !== authorized[i])) {
    throw new CscError('invalid_request', 'hashes are not the hashes this access token authorizes');
  }
  const used = await deps.store.useToken(accessToken, seconds(deps));
  if (!used.ok) throw tokenRefusal(used);
  // What the token says at the moment of its use: the sign request the citizen's login must bind.
  const intake = intakeBody(used.grant);
  const wait = mode === 'S' ? deps.config.signWaitSeconds : 0;
  const submitted = await deps.submit(intakeEvent(event, grant.clientId, wait, intake));
  const returnValidationInfo = body.returnValidationInfo === true;
  if (mode === 'S') {
    return signedAnswer(submitted, method, authorized.length, returnValidationInfo) ?? notSigned();
  }
  // Operation mode A: accepted by the pipeline (else its refusal); the client polls with the responseID.
  refusalOf(submitted);
  const responseID = randomSecret();
  await deps.store.putResponse(responseID, accessToken, {
    clientId: grant.clientId,
    requestId: intake.requestId as string,
    method,
    count: authorized.length,
    returnValidationInfo,
    expiresAt: seconds(deps) + validity,
  });
  return json(200, { responseID });
}

/** CSC validity_period (milliseconds, mode A only): how long the outcome stays available; 10 min at most. */
function validityPeriodSeconds(body: Record<string, unknown>, mode: string): number {
  if (body.validity_period === undefined) return DEFAULT_VALIDITY_SECONDS;
  const ms = body.validity_period;
  if (
    mode !== 'A' ||
    typeof ms !== 'number' ||
    !Number.isInteger(ms) ||
    ms < 1000 ||
    ms > MAX_VALIDITY_SECONDS * 1000
  ) {
    throw new CscError(
      'invalid_request',
      'Invalid parameter validity_period: 1000 to 600000 ms, with operationMode A',
    );
  }
  return Math.ceil(ms / 1000);
}
const DEFAULT_VALIDITY_SECONDS = 300;
const MAX_VALIDITY_SECONDS = 600;

type PipelineResult = SignedResult & {
  status?: string;
  documents?: SignedResult[];
  error?: { code?: string; message?: string };
};

/** The CSC answer of a signed request of the pipeline (in order), or undefined when it is not signed. */
function signedAnswer(
  answered: Result,
  method: CscMethod,
  count: number,
  returnValidationInfo: boolean,
): Result | undefined {
  const result = refusalOf(answered);
  if (answered.statusCode !== 200 || result.status !== 'signed') return undefined;
  const results = result.documents ?? [result];
  const values = results.map((r) => (method === 'signHash' ? r.signature : r.cms));
  if (!values.every((v) => typeof v === 'string') || values.length !== count) return undefined;
  if (method === 'signHash') return json(200, { signatures: values });
  return json(200, {
    SignatureObject: values,
    ...(returnValidationInfo ? { validationInfo: validationInfoOf(results) } : {}),
  });
}

/** The pipeline's answer, or its refusal (or its failed request) as the CSC error cscErrorFor maps it to. */
function refusalOf(answered: Result): PipelineResult {
  const result = JSON.parse(answered.body || '{}') as PipelineResult;
  if (result.error?.code) {
    throw new CscError(cscErrorFor(result.error.code), result.error.message ?? result.error.code);
  }
  if (answered.statusCode >= 400)
    throw new CscError('server_error', 'the pipeline did not accept the request');
  return result;
}

const notSigned = (): never => {
  throw new CscError('server_error', 'the signature was not made within the wait');
};

/**
 * signatures/signPolling (operation mode A): the outcome of an earlier signHash or signDoc, by its
 * `responseID`, for the access token that asked for it (presented again, though used) until the
 * validity_period ends; while the pipeline still works, `invalid_request` saying so (CSC: the previous
 * asynchronous request is not completed yet).
 */
async function signPolling(event: Event, deps: CscHandlerDeps): Promise<Result> {
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
  const answered = await deps.submit(readEvent(event, pending.clientId, pending.requestId));
  return (
    signedAnswer(answered, pending.method, pending.count, pending.returnValidationInfo) ??
    json(400, {
      error: 'invalid_request',
      error_description: 'the previous asynchronous signature request is not completed yet',
    })
  );
}

/** GET /sign-requests/{id} as the API receives it, from the CSC client (`csc:<clientId>`). */
function readEvent(event: Event, clientId: string, requestId: string): Event {
  const post = intakeEvent(event, clientId, 0, {});
  return {
    ...post,
    resource: '/sign-requests/{id}',
    path: `/sign-requests/${requestId}`,
    httpMethod: 'GET',
    queryStringParameters: null,
    pathParameters: { id: requestId },
    body: null,
    requestContext: {
      ...post.requestContext,
      resourcePath: '/sign-requests/{id}',
      httpMethod: 'GET',
    } as Event['requestContext'],
  };
}

interface SignedResult {
  readonly signature?: string;
  readonly cms?: string;
  readonly validationData?: {
    readonly certificates?: readonly string[];
    readonly ocspResponses?: readonly string[];
    readonly crls?: readonly string[];
  };
}

/** The digest algorithm the token authorizes (one for all its hashes). */
function authorizedAlgorithm(signing: CscSigning): string {
  const { binding } = signing;
  return 'documents' in binding ? binding.documents[0].digestAlgorithm : binding.digestAlgorithm;
}

/**
 * signDoc's `documentDigests` (CSC v2 11.11): entries of `hashes` with their `hashAlgorithmOID`,
 * `signAlgo`, `signature_format` and `conformance_level`, which must be the authorized ones.
 */
function documentDigestEntries(
  body: Record<string, unknown>,
  signing: CscSigning,
): Record<string, unknown>[] {
  if (body.documents !== undefined) {
    throw new CscError('invalid_request', 'documents are not accepted: send documentDigests');
  }
  const entries = body.documentDigests;
  if (!Array.isArray(entries) || entries.length === 0 || entries.length > authorizedDigests(signing).length) {
    throw new CscError('invalid_request', 'documentDigests is required');
  }
  return entries.map((entry: unknown) => {
    const e = (entry ?? {}) as Record<string, unknown>;
    if (
      e.signature_format !== signing.document?.signatureFormat ||
      conformanceLevelOf(e.conformance_level) !== signing.document?.conformanceLevel
    ) {
      throw new CscError(
        'invalid_request',
        'signature_format and conformance_level must be the ones this access token authorizes',
      );
    }
    return e;
  });
}

/** The pipeline's sign request the token's signing names: one document, or the documents of its manifest. */
function intakeBody(grant: CscGrant): Record<string, unknown> {
  const { binding, signMessage, document } = grant.signing!;
  const level = document ? { level: document.level } : {};
  const common = {
    requestId: binding.requestId,
    keyType: binding.keyType,
    signatureAlgorithm: binding.signatureAlgorithm,
    signMessage,
    identityAssertion: grant.idToken,
  };
  if ('documents' in binding) {
    return {
      ...common,
      documents: binding.documents.map((d) => ({ ...d, ...(d.format === 'cms' ? level : {}) })),
    };
  }
  return {
    ...common,
    digest: binding.digest,
    digestAlgorithm: binding.digestAlgorithm,
    format: binding.format,
    ...(binding.profile ? { profile: binding.profile, ...level } : {}),
  };
}

/** CSC validationInfo: the DER (base64) certificates, OCSP responses and CRLs of the results, once each. */
function validationInfoOf(results: readonly SignedResult[]): Record<string, string[]> {
  const all = (pick: (r: SignedResult) => readonly string[] | undefined) => [
    ...new Set(results.flatMap((r) => pick(r) ?? [])),
  ];
  return {
    certificates: all((r) => r.validationData?.certificates),
    ocsp: all((r) => r.validationData?.ocspResponses),
    crl: all((r) => r.validationData?.crls),
  };
}

/**
 * signatures/timestamp (CSC v2 11.12): the service's RFC 3161 TSA over the client's `hash` with its
 * `hashAlgorithmOID` (and its `nonce`, hex, when given), for a token of scope service or credential (read,
 * not used). Answers `{ timestamp }`, the DER TimeStampToken in base64.
 */
async function timestamp(event: Event, deps: CscHandlerDeps): Promise<Result> {
  await grantOfBearer(event, deps, ['service', 'credential']);
  const body = parseBody(event);
  const algorithm = digestAlgorithmOf(body.hashAlgorithmOID);
  const hash = Buffer.from(digestOf(body.hash, algorithm, 'hash'), 'base64');
  let nonce: Buffer | undefined;
  if (body.nonce !== undefined) {
    if (typeof body.nonce !== 'string' || !/^(?:[0-9a-fA-F]{2}){1,32}$/.test(body.nonce)) {
      throw new CscError('invalid_request', 'Invalid parameter nonce: 1 to 32 bytes, hex');
    }
    nonce = Buffer.from(body.nonce, 'hex');
  }
  try {
    const token = await deps.timeStamper.timeStampHash(hash, algorithm, nonce);
    return json(200, { timestamp: token.toString('base64') });
  } catch (err) {
    deps.logger.warn('time-stamp for a CSC client failed', { errorName: (err as Error)?.name });
    throw new CscError('temporarily_unavailable', 'the time-stamping authority is unavailable');
  }
}

/** The sign request as the API receives it, from the CSC client (`csc:<clientId>`), waiting for its end. */
function intakeEvent(
  event: Event,
  clientId: string,
  waitSeconds: number,
  body: Record<string, unknown>,
): Event {
  // wait=0 (mode A): the API answers at once, the request accepted.
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

function bearerToken(event: Event): string {
  const header = headerOf(event, 'authorization') ?? '';
  const found = /^Bearer ([A-Za-z0-9._~+/-]{1,512}=*)$/.exec(header);
  if (!found) throw new CscError('invalid_token', 'an access token (Authorization: Bearer) is required');
  return found[1];
}

async function grantOfBearer(
  event: Event,
  deps: CscHandlerDeps,
  scopes: readonly CscGrant['scope'][],
): Promise<CscGrant> {
  const read = await deps.store.getToken(bearerToken(event), seconds(deps));
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
  return json(err.status, err.toJSON(), challengeOf(err));
}

/**
 * The authentication challenge of a refusal: Basic for a client (RFC 6749 5.2), Bearer with the error for
 * an access token (RFC 6750 3: every 401 and 403 of a resource method).
 */
function challengeOf(err: CscError): Record<string, string> {
  if (err.code === 'invalid_client') return { 'WWW-Authenticate': 'Basic realm="csc"' };
  if (err.code !== 'invalid_token' && err.code !== 'insufficient_scope') return {};
  // RFC 6750 3: the description is a quoted-string of printable ASCII without '"' and '\\'.
  const description = err.message.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, ' ');
  return {
    'WWW-Authenticate': `Bearer realm="csc", error="${err.code}", error_description="${description}"`,
  };
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
  const { api } = wireApi(functionConfig);
  // The CSC clients authenticate to this function, not to API Gateway: their sign requests carry
  // `csc:<clientId>` as their client, and no API key.
  const intake = { ...api, settings: { ...api.settings, apiKeyPrincipals: undefined } };
  const { jwk, privateKey } = idpClientKey(keyText);
  const { doc, pipeline } = wire(functionConfig);
  const { timeStamping } = pipeline;
  const timeStamper =
    timeStamping.kind === 'function'
      ? new FunctionTimeStamper(lambdaClient(aws), timeStamping.functionName)
      : new HttpTimeStamper(
          timeStamping.url,
          readFileSync(timeStamping.trustAnchorsFile, 'utf8').match(
            /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g,
          ) ?? [],
        );
  return {
    timeStamper,
    config,
    store: new CscRepository(doc, { tableName: functionConfig.app.tables.csc }),
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
