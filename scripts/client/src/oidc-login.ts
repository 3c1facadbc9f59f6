/**
 * Getting an OpenID Connect ID token for a sign request, on the e-service side. Two parts:
 *
 * 1. The relying party (generic, copy this): openid-client against any OpenID Provider. Discovery (cached
 *    per issuer), an authorization request with PKCE (S256), the caller's nonce (which binds the ID token
 *    to one sign request), a random state, and the Swedish profile's scope and `prompt=login consent`;
 *    then the authorization code grant, which checks state, iss, and the ID token's signature (JWKS),
 *    alg, issuer, audience, expiry and nonce before it hands out the claims. With a sign message, the
 *    request follows the oidc-sweden Signature Extension for OpenID Connect: the scope
 *    `https://id.oidc.se/scope/sign` and the parameter `https://id.oidc.se/param/signRequest`, a JWT
 *    signed with the client's registered key carrying `tbs_data` (the digest; for several documents the
 *    manifest hash, with the composed message: documentsSignatureRequest) and `sign_message`; the ID
 *    token then carries the provider's approval (`https://id.oidc.se/claim/userSignature`). A web
 *    e-service calls beginLogin, redirects the browser, and calls completeLogin on the callback.
 * 2. A scripted user agent (specific to the local IdP in scripts/local/idp): plain fetch with manual
 *    redirects and a small cookie jar that fills in the IdP's login form for a test citizen (and signs,
 *    or cancels, on its signature page), in place of a browser and a person. Against a real IdP the
 *    user's browser does this part.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import * as oidc from 'openid-client';
import {
  composeSignMessage,
  manifestHash,
  type ClientSigningKey,
  type DocumentsBinding,
  type SignMessage,
} from './signing-client';

export const DEFAULT_REDIRECT_URI = 'http://127.0.0.1/callback';
/** Names and personal identity number (Swedish OIDC profile). */
export const DEFAULT_SCOPE = 'openid profile https://id.oidc.se/scope/naturalPersonNumber';
/** The signature extension of the Swedish profile: a fresh authentication and consent for each signature. */
export const DEFAULT_PROMPT = 'login consent';
/** The signature extension's scope, request parameter and claim (oidc-sweden, v1.2). */
export const SCOPE_SIGN = 'https://id.oidc.se/scope/sign';
export const PARAM_SIGN_REQUEST = 'https://id.oidc.se/param/signRequest';
export const USER_SIGNATURE_CLAIM = 'https://id.oidc.se/claim/userSignature';

/** What the citizen is asked to sign at the identity provider. */
export interface SignatureRequest {
  /** The client's key registered with the identity provider, which signs the signRequest parameter. */
  readonly key: ClientSigningKey;
  /**
   * The data to be signed: the sign request's digest (standard base64), or for a `documents` request
   * the manifest hash (documentsSignatureRequest).
   */
  readonly tbsData: string;
  readonly signMessage: SignMessage;
  /**
   * The message's language (an RFC 5646 tag, e.g. `sv`): sent as `message#<language>` instead of
   * `message`. One language per request: the sign request's nonce binds the hash of exactly the text
   * the provider shows, so the e-service offers the citizen's language only (docs/identity.md).
   */
  readonly language?: string;
  /** Shown beside the fingerprint (the local provider's own field of the signRequest). */
  readonly documentName?: string;
}

export interface ObtainIdTokenOptions {
  /** Issuer identifier, e.g. http://127.0.0.1:<port> for the local IdP. */
  readonly issuer: string;
  readonly clientId: string;
  /** Registered redirect URI; default http://127.0.0.1/callback. */
  readonly redirectUri?: string;
  /** The test citizen the scripted user agent logs in as. */
  readonly personalIdentityNumber: string;
  /** Goes into the ID token; the signing service checks it against the sign request. */
  readonly nonce: string;
  /** acr_values, e.g. the loa3 URI; default none (the IdP reports the level it authenticated at). */
  readonly acrValues?: readonly string[];
  readonly scope?: string;
  readonly prompt?: string;
  /** The client's registered id_token_signed_response_alg; an ID token in another alg is refused. Default RS256. */
  readonly idTokenSignedResponseAlg?: string;
  /** More authorization request parameters (e.g. `claims`); they cannot replace the ones set here. */
  readonly extraParameters?: Readonly<Record<string, string>>;
  /** Ask for a signature (the signature extension) instead of a plain login. */
  readonly signature?: SignatureRequest;
  /**
   * Where the signRequest goes (extension 3.1.1): a custom request parameter, its own JWT (default), or
   * a signed Request Object holding every authorization parameter (`request`).
   */
  readonly signRequestPlacement?: 'parameter' | 'request-object';
  /** What the scripted user agent does on the provider's signature page (default: sign). */
  readonly decision?: 'sign' | 'cancel';
  /** The scripted user agent's Accept-Language header (a browser's language preference). */
  readonly acceptLanguage?: string;
  /** Called with each HTML page the scripted user agent reads at the provider (tests look at them). */
  readonly onPage?: (html: string, url: URL) => void;
}

export interface IdTokenResult {
  /** The compact JWS, as sent to the signing service. */
  readonly idToken: string;
  /** Its payload, as openid-client validated it. */
  readonly claims: Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------------
// 1. Relying party (generic)
// ---------------------------------------------------------------------------------------------------

/** Plain http is accepted for loopback issuers only (the local IdP); anything else must be https. */
function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
}

const discoveries = new Map<string, Promise<oidc.ServerMetadata>>();
/** Per issuer, client and alg: a Configuration also caches the issuer's JWKS. */
const configurations = new Map<string, Promise<oidc.Configuration>>();

function cached<T>(map: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
  let value = map.get(key);
  if (value === undefined) {
    value = load();
    map.set(key, value);
    // A failure is not cached: the next call tries again (the IdP may just be starting).
    value.catch(() => map.delete(key));
  }
  return value;
}

function discover(issuer: string, clientId: string): Promise<oidc.ServerMetadata> {
  return cached(discoveries, issuer, async () => {
    const url = new URL(issuer);
    const execute = isLoopbackHttp(url) ? [oidc.allowInsecureRequests] : [];
    const config = await oidc.discovery(url, clientId, undefined, oidc.None(), { execute });
    return config.serverMetadata();
  });
}

function configurationFor(issuer: string, clientId: string, alg: string): Promise<oidc.Configuration> {
  return cached(configurations, `${issuer} ${clientId} ${alg}`, async () => {
    const server = await discover(issuer, clientId);
    // A public client: no secret, PKCE protects the code.
    const config = new oidc.Configuration(
      server,
      clientId,
      { id_token_signed_response_alg: alg },
      oidc.None(),
    );
    if (isLoopbackHttp(new URL(issuer))) oidc.allowInsecureRequests(config);
    // The ID token is passed on as evidence to the signing service: check its signature against the
    // issuer's JWKS here too (openid-client otherwise relies on the TLS channel to the token endpoint).
    oidc.enableNonRepudiationChecks(config);
    return config;
  });
}

/**
 * The signRequest parameter (extension 3.1.1.1): a JWT signed with the client's registered key, to the
 * provider (`aud`), short-lived, with `tbs_data` and `sign_message` (the message base64 of UTF-8).
 */
export function signRequestParameter(options: {
  readonly clientId: string;
  readonly issuer: string;
  readonly signature: SignatureRequest;
  readonly ttlSeconds?: number;
}): Promise<string> {
  return signedJwt(options.signature.key, signRequestValue(options.signature), options);
}

/** The signRequest's value (extension 3.1): `tbs_data`, `sign_message`, and `document_name` if any. */
export function signRequestValue(signature: SignatureRequest): Record<string, unknown> {
  const { tbsData, signMessage, documentName, language } = signature;
  return {
    tbs_data: tbsData,
    sign_message: {
      [language === undefined ? 'message' : `message#${language}`]: Buffer.from(
        signMessage.text,
        'utf8',
      ).toString('base64'),
      mime_type: signMessage.mimeType ?? 'text/plain',
    },
    ...(documentName === undefined ? {} : { document_name: documentName }),
  };
}

/**
 * What the citizen is asked to sign for a `documents` request: `tbs_data` the manifest hash, and the
 * sign message composed of the e-service's text and the numbered list of the documents (what the sign
 * request's nonce binds the hash of).
 */
export function documentsSignatureRequest(
  key: ClientSigningKey,
  binding: Pick<DocumentsBinding, 'documents'> & { readonly signMessage: SignMessage },
  language?: string,
): SignatureRequest {
  return {
    key,
    tbsData: manifestHash(binding.documents),
    signMessage: composeSignMessage(binding.signMessage, binding.documents),
    ...(language === undefined ? {} : { language }),
  };
}

/** A JWT of the client to the provider (`iss`, `aud`, `iat`, `exp`, `jti`; extension 3.1.2). */
function signedJwt(
  key: ClientSigningKey,
  claims: Record<string, unknown>,
  options: { readonly clientId: string; readonly issuer: string; readonly ttlSeconds?: number },
  typ = 'JWT',
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ })
    .setIssuer(options.clientId)
    .setAudience(options.issuer)
    .setIssuedAt(now)
    .setExpirationTime(now + (options.ttlSeconds ?? 300))
    .setJti(randomUUID())
    .sign(key.privateKey);
}

/** The provider does not advertise what a signature request needs (extension 4.1). */
export class SignatureNotSupportedError extends Error {
  public override readonly name = 'SignatureNotSupportedError';
}

export const USER_MESSAGE_MIME_TYPES = 'https://id.oidc.se/disco/userMessageSupportedMimeTypes';

/**
 * The relying party's checks of the extension (4.1) before it asks for a signature: the provider's
 * discovery document lists the sign scope in `scopes_supported`, and the sign message's MIME type among
 * `https://id.oidc.se/disco/userMessageSupportedMimeTypes` (`["text/plain"]` when absent, 5.3).
 */
export function checkSignatureSupport(server: oidc.ServerMetadata, signature: SignatureRequest): void {
  const scopes = server.scopes_supported;
  if (!Array.isArray(scopes) || !scopes.includes(SCOPE_SIGN)) {
    throw new SignatureNotSupportedError(`the provider does not list ${SCOPE_SIGN} in scopes_supported`);
  }
  const advertised = (server as Record<string, unknown>)[USER_MESSAGE_MIME_TYPES];
  const mimeTypes = Array.isArray(advertised) ? advertised : ['text/plain'];
  const mimeType = signature.signMessage.mimeType ?? 'text/plain';
  if (!mimeTypes.includes(mimeType)) {
    throw new SignatureNotSupportedError(`the provider does not display sign messages of type ${mimeType}`);
  }
}

/** A login under way: where to send the browser, and what completeLogin needs back (keep it server-side). */
export interface PendingLogin {
  readonly authorizationUrl: URL;
  readonly issuer: string;
  readonly clientId: string;
  readonly idTokenSignedResponseAlg: string;
  readonly redirectUri: string;
  readonly codeVerifier: string;
  readonly state: string;
  readonly nonce: string;
}

/** The provider answered the authorization request with an OAuth error (`access_denied`: the citizen cancelled). */
export class AuthorizationError extends Error {
  public override readonly name = 'AuthorizationError';
  public constructor(
    public readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Builds the authorization request (PKCE, state, the nonce; with a signature, the extension's scope and parameter). */
export async function beginLogin(
  options: Omit<ObtainIdTokenOptions, 'personalIdentityNumber' | 'decision' | 'acceptLanguage' | 'onPage'>,
): Promise<PendingLogin> {
  const redirectUri = options.redirectUri ?? DEFAULT_REDIRECT_URI;
  const alg = options.idTokenSignedResponseAlg ?? 'RS256';
  const config = await configurationFor(options.issuer, options.clientId, alg);
  if (options.signature) checkSignatureSupport(config.serverMetadata(), options.signature);
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const scope = options.scope ?? DEFAULT_SCOPE;
  const inRequestObject =
    options.signature !== undefined && options.signRequestPlacement === 'request-object';
  const parameters: Record<string, string> = {
    ...options.extraParameters,
    ...(options.signature && !inRequestObject
      ? {
          [PARAM_SIGN_REQUEST]: await signRequestParameter({
            clientId: options.clientId,
            issuer: options.issuer,
            signature: options.signature,
          }),
        }
      : {}),
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: options.signature && !scope.split(' ').includes(SCOPE_SIGN) ? `${scope} ${SCOPE_SIGN}` : scope,
    prompt: options.prompt ?? DEFAULT_PROMPT,
    nonce: options.nonce,
    state,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    ...(options.acrValues?.length ? { acr_values: options.acrValues.join(' ') } : {}),
  };
  // In a Request Object (extension 3.1.1.2, RECOMMENDED): every parameter inside it, signed with the
  // client's key, the signRequest as a JSON object; outside only what OAuth needs to find the client.
  const authorizationUrl = inRequestObject
    ? oidc.buildAuthorizationUrl(config, {
        client_id: options.clientId,
        response_type: parameters.response_type,
        scope: parameters.scope,
        request: await signedJwt(
          options.signature!.key,
          {
            ...parameters,
            client_id: options.clientId,
            ...(parameters.claims === undefined ? {} : { claims: JSON.parse(parameters.claims) as unknown }),
            [PARAM_SIGN_REQUEST]: signRequestValue(options.signature!),
          },
          options,
          'oauth-authz-req+jwt',
        ),
      })
    : oidc.buildAuthorizationUrl(config, parameters);
  return {
    authorizationUrl,
    issuer: options.issuer,
    clientId: options.clientId,
    idTokenSignedResponseAlg: alg,
    redirectUri,
    codeVerifier,
    state,
    nonce: options.nonce,
  };
}

/**
 * The callback: the authorization code grant with the pending login's PKCE verifier, state and nonce.
 * Throws AuthorizationError when the provider answered with an error (e.g. access_denied).
 */
export async function completeLogin(pending: PendingLogin, callbackUrl: URL): Promise<IdTokenResult> {
  const config = await configurationFor(pending.issuer, pending.clientId, pending.idTokenSignedResponseAlg);
  let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
  try {
    tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedNonce: pending.nonce,
      expectedState: pending.state,
      idTokenExpected: true,
    });
  } catch (err) {
    if (err instanceof oidc.AuthorizationResponseError) {
      throw new AuthorizationError(err.error, err.error_description ?? err.error);
    }
    throw err;
  }
  const claims = tokens.claims();
  if (tokens.id_token === undefined || claims === undefined) {
    throw new Error('the token response has no ID token');
  }
  return { idToken: tokens.id_token, claims: { ...claims } };
}

/** Logs the citizen in at the issuer (scripted) and returns the validated ID token. */
export async function obtainIdToken(options: ObtainIdTokenOptions): Promise<IdTokenResult> {
  const pending = await beginLogin(options);
  const callbackUrl = await loginAtLocalIdp(
    pending.authorizationUrl,
    pending.redirectUri,
    options.personalIdentityNumber,
    options.decision ?? 'sign',
    { acceptLanguage: options.acceptLanguage, onPage: options.onPage },
  );
  return completeLogin(pending, callbackUrl);
}

// ---------------------------------------------------------------------------------------------------
// 2. Scripted user agent (specific to the local IdP's pages)
// ---------------------------------------------------------------------------------------------------

/** The local IdP refused the login (unknown citizen) or showed a page this user agent does not know. */
export class LocalIdpLoginError extends Error {
  public override readonly name = 'LocalIdpLoginError';
}

const MAX_STEPS = 12;

interface StoredCookie {
  readonly name: string;
  readonly value: string;
  readonly path: string;
}

/** Just enough of RFC 6265 for one login at one origin: name, value, Path, Max-Age and Expires. */
class CookieJar {
  private readonly cookies = new Map<string, StoredCookie>();

  public constructor(private readonly origin: string) {}

  public store(url: URL, response: Response): void {
    if (url.origin !== this.origin) return;
    for (const header of response.headers.getSetCookie()) {
      const [pair, ...attributes] = header.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let path = url.pathname.slice(0, Math.max(1, url.pathname.lastIndexOf('/')));
      let expired = false;
      for (const attribute of attributes) {
        const [key, raw = ''] = attribute.split('=');
        const attributeValue = raw.trim();
        switch (key.trim().toLowerCase()) {
          case 'path':
            if (attributeValue.startsWith('/')) path = attributeValue;
            break;
          case 'max-age':
            expired ||= Number(attributeValue) <= 0;
            break;
          case 'expires':
            expired ||= Date.parse(attributeValue) <= Date.now();
            break;
        }
      }
      const id = `${name};${path}`;
      if (expired) this.cookies.delete(id);
      else this.cookies.set(id, { name, value, path });
    }
  }

  public header(url: URL): string | undefined {
    if (url.origin !== this.origin) return undefined;
    const matches = (path: string): boolean =>
      url.pathname === path ||
      (url.pathname.startsWith(path) && (path.endsWith('/') || url.pathname[path.length] === '/'));
    const sent = [...this.cookies.values()].filter((c) => matches(c.path)).map((c) => `${c.name}=${c.value}`);
    return sent.length > 0 ? sent.join('; ') : undefined;
  }
}

interface FormSubmission {
  readonly action: URL;
  readonly fields: URLSearchParams;
}

const decodeEntities = (text: string): string =>
  text.replace(
    /&(amp|lt|gt|quot|#39);/g,
    (_m, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e] ?? '',
  );

/**
 * The form to submit on a local IdP page: the first POST form (login, sign, approve), or with `cancel` the
 * one whose action ends in /cancel when the page has it; its named inputs with their values (login
 * filled in).
 */
function submissionOf(
  html: string,
  base: URL,
  personalIdentityNumber: string,
  cancel: boolean,
): FormSubmission | undefined {
  const forms = [
    ...html.matchAll(/<form\b[^>]*\bmethod="post"[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/gi),
  ];
  const signing = /\/approve"/.test(html);
  const form = (cancel && signing ? forms.find((f) => f[1].endsWith('/cancel')) : undefined) ?? forms[0];
  if (!form) return undefined;
  const fields = new URLSearchParams();
  for (const input of form[2].matchAll(/<input\b[^>]*>/gi)) {
    const name = /\bname="([^"]*)"/.exec(input[0])?.[1];
    if (name === undefined) continue;
    const value = /\bvalue="([^"]*)"/.exec(input[0])?.[1] ?? '';
    fields.set(decodeEntities(name), name === 'login' ? personalIdentityNumber : decodeEntities(value));
  }
  return { action: new URL(decodeEntities(form[1]), base), fields };
}

function errorTextOf(html: string): string | undefined {
  const error = /<p class="error"[^>]*>([\s\S]*?)<\/p>/.exec(html);
  return error ? decodeEntities(error[1].replace(/<[^>]*>/g, '')).trim() : undefined;
}

/**
 * Follows the authorization request through the IdP's pages (login form, then the signature page or the
 * approval form if one comes) until the IdP redirects to the redirect URI; returns that URL (code, state,
 * iss, or an error). On a signature page it signs, or with `decision` cancel, cancels.
 */
export async function loginAtLocalIdp(
  authorizationUrl: URL,
  redirectUri: string,
  personalIdentityNumber: string,
  decision: 'sign' | 'cancel',
  browser: Pick<ObtainIdTokenOptions, 'acceptLanguage' | 'onPage'> = {},
): Promise<URL> {
  const callback = new URL(redirectUri);
  const jar = new CookieJar(authorizationUrl.origin);
  let url = authorizationUrl;
  let body: URLSearchParams | undefined;
  for (let step = 0; step < MAX_STEPS; step++) {
    const cookie = jar.header(url);
    const response = await fetch(url, {
      method: body ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        ...(cookie ? { cookie } : {}),
        ...(browser.acceptLanguage === undefined ? {} : { 'accept-language': browser.acceptLanguage }),
      },
      body,
    });
    jar.store(url, response);
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel();
      const next = new URL(location, url);
      if (next.origin === callback.origin && next.pathname === callback.pathname) return next;
      [url, body] = [next, undefined];
      continue;
    }
    const html = await response.text();
    browser.onPage?.(html, url);
    const error = errorTextOf(html);
    if (error !== undefined) throw new LocalIdpLoginError(`the local IdP refused the login: ${error}`);
    const submission = response.ok
      ? submissionOf(html, url, personalIdentityNumber, decision === 'cancel')
      : undefined;
    if (!submission)
      throw new LocalIdpLoginError(
        `unexpected page from the local IdP: HTTP ${response.status} at ${url.pathname}`,
      );
    [url, body] = [submission.action, submission.fields];
  }
  throw new LocalIdpLoginError(`no redirect to ${redirectUri} after ${MAX_STEPS} steps`);
}
