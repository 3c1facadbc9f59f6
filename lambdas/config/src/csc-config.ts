import type { CscClient, CscLifetimes, CscServiceDescription } from '@pipeline/core/csc';
import { ConfigError } from './errors';
import { ENV } from './env-names';
import { int, jsonArray, secretSource, str } from './readers';
import { isFetchableUrl } from './identity-config';
import type { Env, SecretSource } from './types';

/** The Cloud Signature Consortium API's settings (docs/csc.md, docs/configuration.md). */
export interface CscConfig {
  /** The public base URL of the CSC API (`.../csc/v2`): its OAuth 2.0 server and its callback are under it. */
  readonly baseUrl: string;
  readonly service: CscServiceDescription;
  /** The registered CSC clients (OAuth 2.0 confidential clients). */
  readonly clients: readonly CscClient[];
  /** The OpenID Provider the citizens log in at (one of IDENTITY_TRUSTED_ISSUERS). */
  readonly idpIssuer: string;
  /** The redirect URI registered for this service at the provider: `<base>/oauth2/callback` unless set. */
  readonly idpRedirectUri: string;
  /**
   * Where this service's private key (a JWK) registered at that provider is read, which signs the
   * signRequest: `file:<path>` locally, `secretsmanager:<secret ARN>` on AWS.
   */
  readonly idpClientKey: SecretSource;
  readonly lifetimes: CscLifetimes;
  /** How long signatures/signHash waits for the pipeline's result (operation mode S). */
  readonly signWaitSeconds: number;
}

/**
 * The secrets the CSC settings name instead of holding them: the service's key at the identity provider
 * (CSC_IDP_CLIENT_KEY), and the registered clients (CSC_CLIENTS) when that variable names a source
 * (`file:` or `secretsmanager:`) instead of holding the JSON itself. The wiring reads them
 * (@pipeline/adapters/parameters) and hands the clients' text to loadCscConfig.
 */
export interface CscSecretSources {
  readonly idpClientKey: SecretSource;
  readonly clients?: SecretSource;
}

export function cscSecretSources(env: Env): CscSecretSources {
  const clients = env[ENV.CSC_CLIENTS];
  return {
    idpClientKey: secretSource(env, ENV.CSC_IDP_CLIENT_KEY, 'a private JWK'),
    ...(clients !== undefined && /^(file|secretsmanager):/.test(clients)
      ? { clients: secretSource(env, ENV.CSC_CLIENTS, 'the clients JSON') }
      : {}),
  };
}

/**
 * `clientsText`: the registered clients' JSON read from CSC_CLIENTS's source (cscSecretSources), when the
 * variable names one; otherwise CSC_CLIENTS holds the JSON.
 */
export function loadCscConfig(env: Env, defaultIssuer: string | undefined, clientsText?: string): CscConfig {
  const baseUrl = str(env, ENV.CSC_BASE_URL).replace(/\/$/, '');
  if (!isFetchableUrl(baseUrl)) {
    throw new ConfigError('CSC_BASE_URL must be an https URL (http only on loopback)', ENV.CSC_BASE_URL);
  }
  const sources = cscSecretSources(env);
  if (sources.clients && clientsText === undefined) {
    throw new ConfigError('CSC_CLIENTS names a secret that was not read', ENV.CSC_CLIENTS);
  }
  const clientsEnv = sources.clients ? { [ENV.CSC_CLIENTS]: clientsText } : env;
  return {
    baseUrl,
    service: {
      name: str(env, 'CSC_SERVICE_NAME', 'HSM signing pipeline'),
      logo: str(env, 'CSC_LOGO_URL', `${baseUrl}/logo.png`),
      region: str(env, 'CSC_REGION', 'SE'),
      lang: str(env, 'CSC_LANG', 'en-US'),
      description: str(
        env,
        'CSC_DESCRIPTION',
        'Remote signatures with one-time keys certified for the citizen an OpenID Provider authenticated',
      ),
      oauth2: baseUrl,
    },
    clients: cscClients(clientsEnv),
    idpIssuer: str(env, ENV.CSC_IDP_ISSUER, defaultIssuer),
    idpRedirectUri: str(env, ENV.CSC_IDP_REDIRECT_URI, `${baseUrl}/oauth2/callback`),
    idpClientKey: sources.idpClientKey,
    lifetimes: {
      flowSeconds: int(env, 'CSC_FLOW_TTL_SECONDS', 600, 60, 3600),
      codeSeconds: int(env, 'CSC_CODE_TTL_SECONDS', 60, 5, 600),
      accessTokenSeconds: int(env, 'CSC_ACCESS_TOKEN_TTL_SECONDS', 120, 1, 3600),
    },
    signWaitSeconds: int(env, 'CSC_SIGN_WAIT_SECONDS', 20, 1, 20),
  };
}

/** JSON `[{"clientId", "name", "secretHash": "<sha256 hex of the secret>", "redirectUris": [...]}]`. */
function cscClients(env: Env): CscClient[] {
  const name = ENV.CSC_CLIENTS;
  return jsonArray(env, name).map((entry: unknown) => {
    const e = (entry ?? {}) as Record<string, unknown>;
    const uris = e.redirectUris;
    if (
      typeof e.clientId !== 'string' ||
      !/^[A-Za-z0-9._-]{1,64}$/.test(e.clientId) ||
      typeof e.name !== 'string' ||
      e.name.length === 0 ||
      e.name.length > 100 ||
      typeof e.secretHash !== 'string' ||
      !/^[0-9a-f]{64}$/.test(e.secretHash) ||
      !Array.isArray(uris) ||
      uris.length === 0 ||
      !uris.every((u) => typeof u === 'string' && /^https?:\/\//.test(u))
    ) {
      throw new ConfigError(
        `${name}: each entry needs clientId, name, secretHash (SHA-256 hex of the secret) and redirectUris`,
        name,
      );
    }
    return {
      clientId: e.clientId,
      name: e.name,
      secretHash: e.secretHash,
      redirectUris: uris as string[],
    };
  });
}
