/**
 * Plays API Gateway (REST API, proxy integration, one stage) in front of the unchanged API handler:
 * routes from the shared definitions, IAM authorization (a SigV4 signature by a client's credentials,
 * verified as invoke-auth.ts does; required with `requireSigV4`, otherwise an unsigned call acts as its
 * API key's own client), API-key authentication (x-api-key, as API Gateway's usage plans do), the caller
 * passed as API Gateway passes it (`requestContext.identity.userArn` and `apiKeyId`), the stage throttle and each client's throttle and daily quota (admission.ts), the CSC API's limits per source and per client (csc-callers.ts), a body cap, and
 * one log line per request. Under `/pki` it plays the public PKI endpoint (CloudFront on AWS): the
 * published CRLs and CA certificates, and the OCSP responder.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { DEFAULT_CSC_CALLER_LIMITS, type ApiLimits, type CscCallerLimits } from '@pipeline/config';
import { CSC_ERRORS, cscErrorFor } from '@pipeline/core/csc';
import { PKI_OBJECTS, type PkiObjectName } from '@pipeline/core/pki';
import { httpStatusOf, messageOf, type HttpErrorCode } from '@pipeline/core/shared';
import {
  API_STAGE,
  CSC_BASE_PATH,
  CSC_ROUTES,
  DSSEXT_BASE_PATH,
  DSSEXT_ROUTES,
  MAX_BODY_BYTES,
  OCSP_ROUTES,
  PKI_SOURCE_LIMITS,
  TSA_RATE_LIMIT,
  TSA_ROUTES,
  ROUTES,
  type RouteDefinition,
} from '@pipeline/resources';
import { Admission } from './admission';
import { CscCallers } from './csc-callers';
import { TokenBucket } from './token-bucket';
import type { ApiClient, SigningApiClient } from './api-keys';
import { verifySigV4 } from './invoke-auth';
import { LOOPBACK_REDIRECT_URI } from '../idp/clients';

export type ApiHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

export interface GatewayOptions {
  readonly handler: ApiHandler;
  /** The clients; those with credentials may sign (SigV4), and their principal is the caller's `userArn`. */
  readonly clients: readonly (ApiClient | SigningApiClient)[];
  /** Refuse an unsigned call of a method that takes an API key (IAM authorization, as on AWS). */
  readonly requireSigV4?: boolean;
  /** The stage throttle (per method) and each client's throttle and daily quota. */
  readonly limits: ApiLimits;
  /** Epoch ms, for the throttles and quotas (tests move it). */
  readonly clock?: () => number;
  readonly log?: (line: string) => void;
  /**
   * The public PKI endpoint: where the CRL function publishes, the OCSP handler, and the TSA handler
   * behind its throttles (per source address, then TSA_RATE_LIMIT for all: as on AWS).
   */
  readonly pki?: { readonly dir: string; readonly ocsp: ApiHandler; readonly tsa: ApiHandler };
  /**
   * The Cloud Signature Consortium API under CSC_BASE_PATH: its callers authenticate to the function
   * (OAuth 2.0 client credentials, bearer tokens), so no API key; the stage throttle applies.
   */
  readonly csc?: ApiHandler;
  /** The DSS-Ext door (docs/dss-ext.md), under DSSEXT_BASE_PATH. */
  readonly dssExt?: ApiHandler;
  /** The CSC API's limits per source and per client (its web ACL on AWS); default DEFAULT_CSC_CALLER_LIMITS. */
  readonly cscLimits?: CscCallerLimits;
}

/** The path of the local IdP's loopback redirect URI (scripts/local/idp/clients.ts), on any port. */
export const LOCAL_IDP_CALLBACK_PATH = new URL(LOOPBACK_REDIRECT_URI).pathname;

/** Where the PKI endpoint is mounted (PKI_BASE_URL is http://127.0.0.1:<port>/pki locally). */
export const PKI_PREFIX = '/pki';

interface Matched {
  readonly route: Pick<RouteDefinition, 'method' | 'resource'> & { readonly authenticated?: boolean };
  readonly pathParameters: Record<string, string> | null;
}

/** What a request's handling shares: the options, the clients by key, the throttles. */
interface Gateway {
  readonly options: GatewayOptions;
  readonly byKey: ReadonlyMap<string, ApiClient | SigningApiClient>;
  readonly signers: readonly SigningApiClient[];
  readonly admission: Admission;
  readonly tsaThrottle: TsaThrottle;
  readonly cscCallers: CscCallers;
}

export function startGateway(options: GatewayOptions, port: number, host = '127.0.0.1'): Promise<Server> {
  const gateway: Gateway = {
    options,
    byKey: new Map(options.clients.map((c) => [c.apiKey, c])),
    signers: options.clients.filter((c): c is SigningApiClient => 'secretAccessKey' in c),
    admission: new Admission(options.limits, options.clock),
    tsaThrottle: new TsaThrottle(options.clock),
    cscCallers: new CscCallers(options.cscLimits ?? DEFAULT_CSC_CALLER_LIMITS, options.clock),
  };
  const server = createServer((req, res) => {
    const started = process.hrtime.bigint();
    let clientId = '-';
    handle(gateway, req, res, (id) => (clientId = id))
      .catch(() => refuse(res, 'INTERNAL_ERROR', messageOf('INTERNAL_ERROR')))
      .finally(() => {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        options.log?.(
          `${req.method} ${req.url?.split('?')[0]} ${res.statusCode} ${ms.toFixed(1)}ms client=${clientId}`,
        );
      });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.keepAliveTimeout = 65_000;
    server.listen(port, host, () => resolve(server));
  });
}

async function handle(
  gateway: Gateway,
  req: IncomingMessage,
  res: ServerResponse,
  setClient: (id: string) => void,
): Promise<void> {
  const { options } = gateway;
  const url = new URL(req.url ?? '/', 'http://gateway');
  if (options.pki && url.pathname.startsWith(`${PKI_PREFIX}/`))
    return servePki(req, res, url, options.pki, gateway.tsaThrottle);
  if (options.csc && url.pathname.startsWith(`${CSC_BASE_PATH}/`))
    return serveCsc(gateway, req, res, url, options.csc);
  if (options.dssExt && url.pathname.startsWith(`${DSSEXT_BASE_PATH}/`))
    return serveDssExt(gateway, req, res, url, options.dssExt);
  // The local IdP registers one loopback redirect URI per client (`/callback`, any port): the signing
  // service's own, which the CSC API's callback answers here (CSC_IDP_REDIRECT_URI).
  if (options.csc && url.pathname === LOCAL_IDP_CALLBACK_PATH) {
    return serveCsc(
      gateway,
      req,
      res,
      new URL(`${CSC_BASE_PATH}/oauth2/callback${url.search}`, url),
      options.csc,
    );
  }
  const matched = apiRoute(req, res, url);
  if (!matched) return;
  const admitted = await admitApiCall(gateway, req, res, matched, setClient);
  if (!admitted) return;
  const { caller, client } = admitted;
  const body = admitted.body ?? (await readBody(req, MAX_BODY_BYTES));
  if (body === 'too-large') return tooLarge(res);
  // An unsigned call (allowed without requireSigV4) acts as its key's own client.
  const userArn = caller?.principal ?? (client && 'principal' in client ? client.principal : undefined);
  const event = toEvent(req, url, matched, body, client, userArn);
  const result = await options.handler(event, lambdaContext('api'));
  res.writeHead(result.statusCode, stringHeaders(result.headers));
  res.end(result.body);
}

/** The signing API's route for the request, or undefined once it was refused (no such route, or method). */
function apiRoute(req: IncomingMessage, res: ServerResponse, url: URL): Matched | undefined {
  const prefix = `/${API_STAGE}`;
  const path = url.pathname.startsWith(`${prefix}/`) ? url.pathname.slice(prefix.length) : undefined;
  const candidates =
    path === undefined ? [] : ROUTES.map((r) => match(r, path)).filter((m) => m !== undefined);
  if (candidates.length === 0) {
    refuse(res, 'ROUTE_NOT_FOUND', `no route ${url.pathname}`);
    return undefined;
  }
  const matched = candidates.find((m) => m.route.method === req.method);
  if (!matched) {
    // RFC 9110: a 405 lists the methods the resource does allow.
    const allow = [...new Set(candidates.map((m) => m.route.method))].join(', ');
    refuse(res, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed here`, {
      Allow: allow,
    });
    return undefined;
  }
  return matched;
}

/**
 * What API Gateway does before the function: IAM authorization (a signed call must verify; its signer is
 * the caller), the API key, then the usage plan and the stage throttle. Undefined once refused; else the
 * caller, the key's client, and the body when the signature check already read it.
 */
async function admitApiCall(
  gateway: Gateway,
  req: IncomingMessage,
  res: ServerResponse,
  matched: Matched,
  setClient: (id: string) => void,
): Promise<
  | {
      body: Buffer | undefined;
      caller: SigningApiClient | undefined;
      client: ApiClient | SigningApiClient | undefined;
    }
  | undefined
> {
  const { options } = gateway;
  // IAM authorization first, as API Gateway does: a signed call must verify; its signer is the caller.
  let body: Buffer | undefined;
  let caller: SigningApiClient | undefined;
  if (req.headers.authorization !== undefined) {
    const read = await readBody(req, MAX_BODY_BYTES);
    if (read === 'too-large') return void tooLarge(res);
    body = read;
    const check = await verifySigV4(req, body, 'execute-api', gateway.signers);
    if (!check.ok) return void refuse(res, 'FORBIDDEN', check.message);
    caller = check.caller;
  } else if (options.requireSigV4 && matched.route.authenticated) {
    return void refuse(res, 'UNAUTHENTICATED', 'the request is not signed (SigV4)');
  }

  // Credentials are required on authenticated routes and optional elsewhere; when given, they must be valid.
  let client: ApiClient | SigningApiClient | undefined;
  const key = req.headers['x-api-key'];
  const keyGiven = typeof key === 'string' && key !== '';
  if (matched.route.authenticated && !keyGiven) {
    return void refuse(res, 'UNAUTHENTICATED', 'missing x-api-key header');
  }
  if (keyGiven) {
    client = gateway.byKey.get(key);
    if (!client) return void refuse(res, 'FORBIDDEN', 'invalid API key');
    setClient(client.clientId);
  }
  // The usage plan covers the methods that require an API key (the key's plan, whoever signed: the
  // function refuses a key that is not its caller's); the stage throttle every method.
  const admitted = gateway.admission.admit(
    `${matched.route.method} ${matched.route.resource}`,
    matched.route.authenticated ? client?.clientId : undefined,
  );
  if (!admitted.ok) {
    return void refuse(res, admitted.code, admitted.message, {
      'Retry-After': String(admitted.retryAfterSeconds),
    });
  }
  return { body, caller, client };
}

async function serveCsc(
  gateway: Gateway,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  csc: ApiHandler,
): Promise<void> {
  const path = url.pathname.slice(CSC_BASE_PATH.length);
  const candidates = CSC_ROUTES.map((r) => match(r, path)).filter((m) => m !== undefined);
  const matched = candidates.find((m) => m.route.method === req.method);
  if (!matched) {
    return cscRefuse(
      res,
      candidates.length ? 'METHOD_NOT_ALLOWED' : 'ROUTE_NOT_FOUND',
      `no CSC method ${req.method} ${url.pathname}`,
    );
  }
  const admitted = gateway.admission.admit(
    `${matched.route.method} ${CSC_BASE_PATH}${matched.route.resource}`,
    undefined,
  );
  if (!admitted.ok) {
    return cscRefuse(res, admitted.code, admitted.message, {
      'Retry-After': String(admitted.retryAfterSeconds),
    });
  }
  const body = await readBody(req, MAX_BODY_BYTES);
  if (body === 'too-large')
    return cscRefuse(res, 'PAYLOAD_TOO_LARGE', `body exceeds ${MAX_BODY_BYTES} bytes`);
  const caller = gateway.cscCallers.admit(
    req,
    matched.route.resource,
    req.socket.remoteAddress ?? '',
    url,
    body,
  );
  if (!caller.ok) {
    return cscRefuse(res, 'THROTTLED', caller.message, {
      'Retry-After': String(caller.retryAfterSeconds),
    });
  }
  const event = { ...toEvent(req, url, matched, body, undefined), path: url.pathname };
  const result = await csc(event, lambdaContext('csc'));
  res.writeHead(result.statusCode, stringHeaders(result.headers));
  res.end(result.body);
}

/** The DSS-Ext door: browsers post forms to it; the stage's throttle applies, the door checks the rest. */
async function serveDssExt(
  gateway: Gateway,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  door: ApiHandler,
): Promise<void> {
  const path = url.pathname.slice(DSSEXT_BASE_PATH.length);
  const matched = DSSEXT_ROUTES.map((r) => match(r, path)).find((m) => m && m.route.method === req.method);
  if (!matched) {
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end(`no DSS-Ext resource ${req.method} ${url.pathname}`);
    return;
  }
  const admitted = gateway.admission.admit(
    `${matched.route.method} ${DSSEXT_BASE_PATH}${matched.route.resource}`,
    undefined,
  );
  if (!admitted.ok) {
    res.writeHead(429, { 'Retry-After': String(admitted.retryAfterSeconds), 'Content-Type': 'text/plain' });
    res.end(admitted.message);
    return;
  }
  const body = await readBody(req, DSSEXT_MAX_BODY_BYTES);
  if (body === 'too-large') {
    res.writeHead(413, { 'Content-Type': 'text/plain' });
    res.end(`body exceeds ${DSSEXT_MAX_BODY_BYTES} bytes`);
    return;
  }
  const event = {
    ...toEvent(req, url, matched, body, undefined),
    resource: `${DSSEXT_BASE_PATH}${matched.route.resource}`,
    path: url.pathname,
  };
  const result = await door(event, lambdaContext('dssext'));
  res.writeHead(result.statusCode, stringHeaders(result.headers));
  res.end(result.body);
}

/** A SignRequest form of many tasks (the door refuses more than its own limit). */
const DSSEXT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * The TSA's throttles: one bucket per source address (the WAF's per-source rule on AWS:
 * PKI_SOURCE_LIMITS.timeStampsPerMinute, at the same average rate), then the method's for all callers
 * together (TSA_RATE_LIMIT, what its HSM login is sized for). A source refused for its own limit takes
 * none of the shared room, so one caller cannot spend the time-stamps of everyone else.
 */
class TsaThrottle {
  private readonly all: TokenBucket;
  private readonly sources = new Map<string, TokenBucket>();
  private readonly perSecond = PKI_SOURCE_LIMITS.timeStampsPerMinute / 60;

  public constructor(private readonly clock?: () => number) {
    this.all = new TokenBucket(TSA_RATE_LIMIT, TSA_RATE_LIMIT * 2, clock);
  }

  public admit(source: string): boolean {
    let own = this.sources.get(source);
    if (!own) {
      // Bounded memory whatever the number of sources (a full bucket is what a new one starts with).
      if (this.sources.size >= 10_000) this.sources.clear();
      own = new TokenBucket(this.perSecond, this.perSecond * 2, this.clock);
      this.sources.set(source, own);
    }
    if (!own.ready() || !this.all.ready()) return false;
    own.take();
    this.all.take();
    return true;
  }
}

/** Static CRLs and CA certificates from the publication directory; OCSP and the TSA through their handlers. */
async function servePki(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  pki: NonNullable<GatewayOptions['pki']>,
  tsaThrottle: TsaThrottle,
): Promise<void> {
  const path = url.pathname.slice(PKI_PREFIX.length);
  const find = (routes: typeof OCSP_ROUTES): Matched | undefined =>
    routes.map((r) => match(r, path)).find((m) => m && m.route.method === req.method);
  const ocsp = find(OCSP_ROUTES);
  const tsa = ocsp ? undefined : find(TSA_ROUTES);
  const route = ocsp ?? tsa;
  if (route) {
    if (tsa && !tsaThrottle.admit(req.socket.remoteAddress ?? '')) {
      res.writeHead(429, { 'Retry-After': '1' });
      res.end();
      return;
    }
    const body = await readBody(req, MAX_BODY_BYTES);
    if (body === 'too-large') return refuse(res, 'PAYLOAD_TOO_LARGE', 'request too large');
    // As API Gateway does for a binary media type: the DER body arrives base64-encoded.
    const event = {
      ...toEvent(req, url, route, body, undefined),
      body: body.toString('base64'),
      isBase64Encoded: true,
    };
    const result = tsa
      ? await pki.tsa({ ...event, path }, lambdaContext('tsa'))
      : await pki.ocsp({ ...event, path }, lambdaContext('ocsp'));
    res.writeHead(result.statusCode, stringHeaders(result.headers));
    res.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
    return;
  }
  const name = path.slice(1);
  if (req.method !== 'GET' || !(name in PKI_OBJECTS)) {
    return refuse(res, 'ROUTE_NOT_FOUND', `no PKI object ${url.pathname}`);
  }
  const der = await readFile(join(pki.dir, name)).catch(() => undefined);
  // The PKI distribution point (S3 behind CloudFront in AWS), not the API: no API code.
  if (!der)
    return send(res, 404, { error: { code: 'NOT_PUBLISHED', message: `${name} is not published yet` } });
  res.writeHead(200, { 'Content-Type': PKI_OBJECTS[name as PkiObjectName], 'Cache-Control': 'max-age=60' });
  res.end(der);
}

function match(route: Matched['route'], path: string): Matched | undefined {
  const names: string[] = [];
  // {name} is one path segment, {name+} the rest of the path (API Gateway's greedy parameter).
  const pattern = route.resource.replace(/\{(\w+)(\+?)\}/g, (_, name: string, greedy: string) => {
    names.push(name);
    return greedy ? '(.+)' : '([^/]+)';
  });
  const found = new RegExp(`^${pattern}/?$`).exec(path);
  if (!found) return undefined;
  // Greedy parameters stay URL-encoded (an OCSP GET request is base64, then URL-encoded): the handler decodes.
  const pathParameters = names.length
    ? Object.fromEntries(
        names.map((n, i) => [
          n,
          route.resource.includes(`{${n}+}`) ? found[i + 1] : decodeURIComponent(found[i + 1]),
        ]),
      )
    : null;
  return { route, pathParameters };
}

function toEvent(
  req: IncomingMessage,
  url: URL,
  matched: Matched,
  body: Buffer,
  client: ApiClient | undefined,
  userArn?: string,
): APIGatewayProxyEvent {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
  const query = url.searchParams.size ? Object.fromEntries(url.searchParams) : null;
  const utf8 = body.toString('utf8');
  const isText = Buffer.from(utf8, 'utf8').equals(body);
  return {
    resource: matched.route.resource,
    path: url.pathname.slice(API_STAGE.length + 1),
    httpMethod: req.method ?? 'GET',
    headers,
    multiValueHeaders: {},
    queryStringParameters: query,
    multiValueQueryStringParameters: null,
    pathParameters: matched.pathParameters,
    stageVariables: null,
    body: body.length ? (isText ? utf8 : body.toString('base64')) : null,
    isBase64Encoded: body.length > 0 && !isText,
    requestContext: {
      stage: API_STAGE,
      requestId: randomUUID(),
      resourcePath: matched.route.resource,
      httpMethod: req.method ?? 'GET',
      identity: {
        apiKeyId: client?.clientId ?? null,
        userArn: userArn ?? null,
        sourceIp: req.socket.remoteAddress ?? '',
      },
    } as unknown as APIGatewayProxyEvent['requestContext'],
  };
}

function tooLarge(res: ServerResponse): void {
  refuse(res, 'PAYLOAD_TOO_LARGE', `body exceeds ${MAX_BODY_BYTES} bytes`, { Connection: 'close' });
}

function readBody(req: IncomingMessage, max: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A refusal of the CSC API in its form (`{ error, error_description }`), the code mapped by cscErrorFor. */
function cscRefuse(
  res: ServerResponse,
  code: HttpErrorCode,
  message: string,
  headers?: Record<string, string>,
): void {
  const error = cscErrorFor(code);
  send(res, CSC_ERRORS[error], { error, error_description: message }, headers);
}

/** A refusal with a code of the client code registry, at its registered HTTP status. */
function refuse(
  res: ServerResponse,
  code: HttpErrorCode,
  message: string,
  headers?: Record<string, string>,
): void {
  send(res, httpStatusOf(code), { error: { code, message } }, headers);
}

function stringHeaders(headers: APIGatewayProxyResult['headers']): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k, String(v)]));
}

/** The few Context fields handlers read; deadlines follow the function's configured timeout. */
export function lambdaContext(functionName: string, timeoutMs = 30_000): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
