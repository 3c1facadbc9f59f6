/**
 * The oidc-provider configuration of the local IdP (runs in the IdP's own process; Jest never loads it).
 * Authorization code flow with PKCE for public clients only, no refresh tokens, the Swedish profile's
 * claims in the ID token itself, acr and auth_time in every ID token, and interactions served by
 * ./interactions (devInteractions off). The signature extension (./sign-request): the sign scope, the
 * signed signRequest parameter (its own JWT or in a signed Request Object) checked at the authorization
 * endpoint, and the approval made at the consent step delivered as the userSignature claim, in the ID
 * token only.
 */
import type { JWK } from 'jose';
import { Provider, errors, type Account, type Configuration } from 'oidc-provider';
import { createMemoryAdapter } from 'oidc-provider/lib/adapters/memory_adapter.js';
import { findCitizenBySub, type TestCitizen } from './citizens';
import { IDP_CLIENTS } from './clients';
import { escapeHtml } from '../../shared/html';
import { page } from './html';
import type { PrivateJwks } from './keys';
import { LOA_VALUES, SWEDISH_CLAIMS, SWEDISH_SCOPES } from './profile';
import {
  PARAM_SIGN_REQUEST,
  SCOPE_SIGN,
  SIGN_REQUEST_ALGORITHMS,
  SignRequestError,
  USER_SIGNATURE_CLAIM,
  checkSignRequestClaims,
  readSignRequest,
  readSignRequestValue,
  readUserMessage,
  PARAM_USER_MESSAGE,
  type ApprovalStore,
  type RequestObjectSignRequests,
} from './sign-request';

export const INTERACTION_PREFIX = '/interaction/';
/** The authorization endpoint's path (oidc-provider's default, set explicitly). */
const AUTHORIZATION_PATH = '/auth';

export interface IdpOptions {
  /** http://127.0.0.1:<port>, no trailing slash. */
  readonly issuer: string;
  readonly jwks: PrivateJwks;
  readonly idTokenTtlSeconds: number;
  /** Keys that sign the IdP's cookies (random per start: a restart ends every session, as intended). */
  readonly cookieKeys: readonly string[];
  /** The clients that may ask for signatures, with the public keys their signRequest is signed with. */
  readonly signClients: ReadonlyMap<string, { readonly keys: readonly JWK[] }>;
  readonly approvals: ApprovalStore;
  /** signRequest values that came in Request Objects, by the reference the request's parameters keep. */
  readonly requestObjectSignRequests: RequestObjectSignRequests;
}

/** The authorization endpoint's URL: a signRequest may name it as its audience (extension 5.1). */
export const authorizationEndpoint = (options: Pick<IdpOptions, 'issuer'>): string =>
  `${options.issuer}${AUTHORIZATION_PATH}`;

const hasSignScope = (scope: unknown): boolean =>
  typeof scope === 'string' && scope.split(' ').includes(SCOPE_SIGN);

/**
 * The signRequest of a Request Object (extension 3.1.1.2), a JSON object there, by the authorization
 * request it came with: oidc-provider keeps only strings among the parameters. Put by the Request Object
 * check below (before oidc-provider verifies the Request Object's signature), taken by the parameter's
 * validator only if that parameter is among the verified Request Object's (`ctx.oidc.trusted`).
 */
const requestObjectValues = new WeakMap<object, { value: unknown; exp: number }>();
/** The userMessage of a Request Object, a JSON object there, by the authorization request (as above). */
const requestObjectUserMessages = new WeakMap<object, unknown>();

/**
 * The Request Object check (oidc-provider's assertJwtClaimsAndHeader): a Request Object holding a
 * signRequest must carry `iss`, `aud`, `iat` and `exp` by the same rules as the parameter's own JWT, and
 * a signRequest value this provider can honour (invalid_request otherwise, extension 5.1).
 */
function requestObjectCheck(options: IdpOptions) {
  return async (
    ctx: object,
    claims: Record<string, unknown>,
    _header: unknown,
    client: { clientId: string },
  ) => {
    if (PARAM_USER_MESSAGE in claims) requestObjectUserMessages.set(ctx, claims[PARAM_USER_MESSAGE]);
    if (!(PARAM_SIGN_REQUEST in claims)) return;
    const value = claims[PARAM_SIGN_REQUEST];
    try {
      checkSignRequestClaims(
        claims,
        {
          clientId: client.clientId,
          issuer: options.issuer,
          authorizationEndpoint: authorizationEndpoint(options),
        },
        'the Request Object holding the signRequest',
      );
      readSignRequestValue(value, []);
    } catch (err) {
      if (err instanceof SignRequestError) throw new errors.InvalidRequest(err.message);
      throw err;
    }
    requestObjectValues.set(ctx, { value, exp: claims.exp as number });
  };
}

/**
 * The extension's processing rules at the authorization endpoint (5.1): with the sign scope, a
 * signRequest signed with the client's registered key and `prompt` with both login and consent, from a
 * client allowed to ask for signatures (else unauthorized_client); a signRequest without the sign scope
 * is refused too. Errors go back to the client as OAuth errors.
 */
function signRequestValidator(options: IdpOptions) {
  return async (
    ctx: { oidc: { params: Record<string, unknown>; trusted?: readonly string[] } },
    value: unknown,
    client: { clientId: string },
  ): Promise<void> => {
    const params = ctx.oidc.params;
    if (!hasSignScope(params.scope)) {
      if (value !== undefined) {
        throw new errors.InvalidRequest(
          `${PARAM_SIGN_REQUEST} is only accepted with the scope ${SCOPE_SIGN}`,
        );
      }
      return;
    }
    const keys = options.signClients.get(client.clientId);
    if (!keys) throw new errors.UnauthorizedClient('this client may not ask for signatures');
    if (value === undefined)
      throw new errors.InvalidRequest(`the scope ${SCOPE_SIGN} needs ${PARAM_SIGN_REQUEST}`);
    const prompt = typeof params.prompt === 'string' ? params.prompt.split(' ') : [];
    if (!prompt.includes('login') || !prompt.includes('consent')) {
      throw new errors.InvalidRequest('a signature request needs prompt=login consent');
    }
    const fromRequestObject = ctx.oidc.trusted?.includes(PARAM_SIGN_REQUEST)
      ? requestObjectValues.get(ctx)
      : undefined;
    if (fromRequestObject) {
      // Checked with the Request Object; kept here, the parameters keep a reference to it.
      ctx.oidc.params[PARAM_SIGN_REQUEST] = options.requestObjectSignRequests.put(
        client.clientId,
        fromRequestObject.value,
        fromRequestObject.exp,
      );
      return;
    }
    try {
      // Languages do not matter here: every message of the request is checked by the display rules.
      await readSignRequest(value, {
        clientId: client.clientId,
        clientJwks: keys,
        issuer: options.issuer,
        authorizationEndpoint: authorizationEndpoint(options),
      });
    } catch (err) {
      if (err instanceof SignRequestError) throw new errors.InvalidRequest(err.message);
      throw err;
    }
  };
}

/**
 * The user message parameter (OIDC.Sweden.Params 2.1), checked at the authorization endpoint by the
 * display rules (invalid_request otherwise). In a verified Request Object it is a JSON object, kept
 * among the parameters as its JSON.
 */
async function userMessageValidator(
  ctx: { oidc: { params: Record<string, unknown>; trusted?: readonly string[] } },
  value: unknown,
): Promise<void> {
  if (value === undefined) return;
  if (ctx.oidc.trusted?.includes(PARAM_USER_MESSAGE) && requestObjectUserMessages.has(ctx)) {
    ctx.oidc.params[PARAM_USER_MESSAGE] = JSON.stringify(requestObjectUserMessages.get(ctx));
  }
  try {
    readUserMessage(ctx.oidc.params[PARAM_USER_MESSAGE], []);
  } catch (err) {
    if (err instanceof SignRequestError) throw new errors.InvalidRequest(err.message);
    throw err;
  }
}

function accountOf(citizen: TestCitizen, approvals: ApprovalStore, grantId?: string): Account {
  const claims = {
    sub: citizen.sub,
    [SWEDISH_CLAIMS.givenName]: citizen.givenName,
    [SWEDISH_CLAIMS.familyName]: citizen.familyName,
    [SWEDISH_CLAIMS.name]: citizen.name,
    [SWEDISH_CLAIMS.personalIdentityNumber]: citizen.personalIdentityNumber,
  };
  // oidc-provider masks this by granted scope and requested claims for each use (ID token, userinfo).
  // The approval of a signature goes in the ID token only (extension 5.2), for the grant it was made in.
  return {
    accountId: citizen.sub,
    claims: (use) => {
      const approval = use === 'id_token' ? approvals.get(grantId) : undefined;
      return approval === undefined ? claims : { ...claims, [USER_SIGNATURE_CLAIM]: approval };
    },
  };
}

export function idpConfiguration(options: IdpOptions): Configuration {
  return {
    // In memory on purpose: one process, started and stopped with the pipeline. Chosen here, so the
    // library does not warn at every start that it chose that for a deployment.
    adapter: createMemoryAdapter(),
    // The clients allowed to sign register their keys: they sign Request Objects as well as signRequests.
    clients: IDP_CLIENTS.map((client) => {
      const keys = options.signClients.get(client.client_id);
      return keys ? { ...client, jwks: { keys: keys.keys } } : client;
    }),
    jwks: options.jwks,
    findAccount: async (_ctx, sub, token) => {
      const citizen = findCitizenBySub(sub);
      return citizen && accountOf(citizen, options.approvals, token?.grantId);
    },
    claims: {
      // acr in the openid scope: every ID token carries it, whether or not the client asked with
      // acr_values or the claims parameter (the Swedish profile expects it; auth_time comes from the
      // clients' require_auth_time).
      openid: ['sub', 'acr'],
      acr: null,
      auth_time: null,
      iss: null,
      sid: null,
      [SWEDISH_SCOPES.profile]: [SWEDISH_CLAIMS.givenName, SWEDISH_CLAIMS.familyName, SWEDISH_CLAIMS.name],
      [SWEDISH_SCOPES.naturalPersonNumber]: [SWEDISH_CLAIMS.personalIdentityNumber],
      [SCOPE_SIGN]: [USER_SIGNATURE_CLAIM],
    },
    scopes: ['openid'],
    extraParams: {
      [PARAM_SIGN_REQUEST]: signRequestValidator(options),
      [PARAM_USER_MESSAGE]: userMessageValidator,
    },
    discovery: {
      // Extension 5.3: the sign scope and its claim come from `claims` (scopes_supported,
      // claims_supported). A client's user message is shown at the login (OIDC.Sweden.Params 2.1,
      // userMessage), in the same MIME types as the sign message (5.3: declared with this field).
      'https://id.oidc.se/disco/userMessageSupported': true,
      'https://id.oidc.se/disco/userMessageSupportedMimeTypes': ['text/plain', 'text/markdown'],
    },
    routes: { authorization: AUTHORIZATION_PATH },
    // Scope-requested claims go in the ID token too, not only to userinfo (OIDC Core 5.4 would keep them
    // out of it for the code flow): the signing service only ever sees the ID token.
    conformIdTokenClaims: false,
    acrValues: LOA_VALUES,
    responseTypes: ['code'],
    subjectTypes: ['public'],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      claimsParameter: { enabled: true },
      // Request Objects by value (extension 3.1.1.2, Swedish profile 2.1.7), signed only.
      requestObjects: {
        enabled: true,
        requireSignedRequestObject: false,
        assertJwtClaimsAndHeader: requestObjectCheck(options),
      },
      userinfo: { enabled: true },
      rpInitiatedLogout: { enabled: false },
    },
    interactions: { url: (_ctx, interaction) => `${INTERACTION_PREFIX}${interaction.uid}` },
    cookies: { keys: options.cookieKeys },
    ttl: {
      AccessToken: 300,
      AuthorizationCode: 60,
      IdToken: options.idTokenTtlSeconds,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
    enabledJWA: {
      idTokenSigningAlgValues: ['RS256', 'PS256', 'ES256'],
      requestObjectSigningAlgValues: [...SIGN_REQUEST_ALGORITHMS],
    },
    // Server-side relying parties only: no browser calls the token or userinfo endpoints cross-origin.
    clientBasedCORS: () => false,
    issueRefreshToken: () => false,
    // error and error_description only (no state or other request parameters echoed).
    renderError: (ctx, out) => {
      ctx.type = 'html';
      const description = out.error_description === undefined ? '' : `: ${String(out.error_description)}`;
      ctx.body = page('Error', `<p class="error">${escapeHtml(`${String(out.error)}${description}`)}</p>`);
    },
  };
}

export function createProvider(options: IdpOptions, log: (line: string) => void): Provider {
  const provider = new Provider(options.issuer, idpConfiguration(options));
  // Errors only by name and message: never tokens, codes or request parameters.
  for (const event of ['server_error', 'authorization.error', 'grant.error', 'userinfo.error']) {
    provider.on(event, (_ctx, err) => log(`${event}: ${err.name}: ${err.message}`));
  }
  return provider;
}
