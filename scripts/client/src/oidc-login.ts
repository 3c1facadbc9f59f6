/**
 * Getting an OpenID Connect ID token for a sign request, on the e-service side. Two parts:
 *
 * 1. The relying party (generic, copy this): openid-client against any OpenID Provider. Discovery (cached
 *    per issuer), an authorization request with PKCE (S256), the caller's nonce (which binds the ID token
 *    to one sign request), a random state, and the Swedish profile's scope and `prompt=login consent`;
 *    then the authorization code grant, which checks state, iss, and the ID token's signature (JWKS),
 *    alg, issuer, audience, expiry and nonce before it hands out the claims.
 * 2. A scripted user agent (specific to the local IdP in scripts/local/idp): plain fetch with manual
 *    redirects and a small cookie jar that fills in the IdP's login form for a test citizen, in place of a
 *    browser and a person. Against a real IdP the user's browser does this part.
 */
import * as oidc from 'openid-client';

export const DEFAULT_REDIRECT_URI = 'http://127.0.0.1/callback';
/** Names and personal identity number (Swedish OIDC profile). */
export const DEFAULT_SCOPE = 'openid profile https://id.oidc.se/scope/naturalPersonNumber';
/** The signature extension of the Swedish profile: a fresh authentication and consent for each signature. */
export const DEFAULT_PROMPT = 'login consent';

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

/** Logs the citizen in at the issuer (scripted) and returns the validated ID token. */
export async function obtainIdToken(options: ObtainIdTokenOptions): Promise<IdTokenResult> {
  const redirectUri = options.redirectUri ?? DEFAULT_REDIRECT_URI;
  const config = await configurationFor(
    options.issuer,
    options.clientId,
    options.idTokenSignedResponseAlg ?? 'RS256',
  );
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const authorizationUrl = oidc.buildAuthorizationUrl(config, {
    ...options.extraParameters,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: options.scope ?? DEFAULT_SCOPE,
    prompt: options.prompt ?? DEFAULT_PROMPT,
    nonce: options.nonce,
    state,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    ...(options.acrValues?.length ? { acr_values: options.acrValues.join(' ') } : {}),
  });

  const callbackUrl = await loginAtLocalIdp(authorizationUrl, redirectUri, options.personalIdentityNumber);

  const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
    pkceCodeVerifier: codeVerifier,
    expectedNonce: options.nonce,
    expectedState: state,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  if (tokens.id_token === undefined || claims === undefined) {
    throw new Error('the token response has no ID token');
  }
  return { idToken: tokens.id_token, claims: { ...claims } };
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

/** The local IdP's pages have one POST form; its named inputs with their values (login filled in). */
function submissionOf(html: string, base: URL, personalIdentityNumber: string): FormSubmission | undefined {
  const form = /<form\b[^>]*\bmethod="post"[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
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
 * Follows the authorization request through the IdP's pages (login form, and the approval form if one
 * comes) until the IdP redirects to the redirect URI; returns that URL (code, state, iss, or an error).
 */
async function loginAtLocalIdp(
  authorizationUrl: URL,
  redirectUri: string,
  personalIdentityNumber: string,
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
      headers: cookie ? { cookie } : {},
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
    const error = errorTextOf(html);
    if (error !== undefined) throw new LocalIdpLoginError(`the local IdP refused the login: ${error}`);
    const submission = response.ok ? submissionOf(html, url, personalIdentityNumber) : undefined;
    if (!submission)
      throw new LocalIdpLoginError(
        `unexpected page from the local IdP: HTTP ${response.status} at ${url.pathname}`,
      );
    [url, body] = [submission.action, submission.fields];
  }
  throw new LocalIdpLoginError(`no redirect to ${redirectUri} after ${MAX_STEPS} steps`);
}
