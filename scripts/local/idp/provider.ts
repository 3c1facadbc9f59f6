/**
 * The oidc-provider configuration of the local IdP (runs in the IdP's own process; Jest never loads it).
 * Authorization code flow with PKCE for public clients only, no refresh tokens, the Swedish profile's
 * claims in the ID token itself, acr and auth_time in every ID token, and interactions served by
 * ./interactions (devInteractions off).
 */
import { Provider, type Account, type Configuration } from 'oidc-provider';
import { findCitizenBySub, type TestCitizen } from './citizens';
import { IDP_CLIENTS } from './clients';
import { escapeHtml, page } from './html';
import type { PrivateJwks } from './keys';
import { LOA_VALUES, SWEDISH_CLAIMS, SWEDISH_SCOPES } from './profile';

export const INTERACTION_PREFIX = '/interaction/';

export interface IdpOptions {
  /** http://127.0.0.1:<port>, no trailing slash. */
  readonly issuer: string;
  readonly jwks: PrivateJwks;
  readonly idTokenTtlSeconds: number;
  /** Keys that sign the IdP's cookies (random per start: a restart ends every session, as intended). */
  readonly cookieKeys: readonly string[];
}

function accountOf(citizen: TestCitizen): Account {
  const claims = {
    sub: citizen.sub,
    [SWEDISH_CLAIMS.givenName]: citizen.givenName,
    [SWEDISH_CLAIMS.familyName]: citizen.familyName,
    [SWEDISH_CLAIMS.name]: citizen.name,
    [SWEDISH_CLAIMS.personalIdentityNumber]: citizen.personalIdentityNumber,
  };
  // oidc-provider masks this by granted scope and requested claims for each use (ID token, userinfo).
  return { accountId: citizen.sub, claims: () => claims };
}

export function idpConfiguration(options: IdpOptions): Configuration {
  return {
    clients: IDP_CLIENTS,
    jwks: options.jwks,
    findAccount: async (_ctx, sub) => {
      const citizen = findCitizenBySub(sub);
      return citizen && accountOf(citizen);
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
    },
    scopes: ['openid'],
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
    enabledJWA: { idTokenSigningAlgValues: ['RS256', 'PS256', 'ES256'] },
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
