import { isAbsolute, resolve } from 'node:path';
import { SWEDISH_CLAIM_MAPPING, type ClaimMapping } from '@pipeline/core/identity';
import { int, jsonArray, oneOf, str } from './readers';
import { ConfigError } from './errors';
import type { Env } from './types';
import { ENV } from './env-names';
import { loadDssExtConfig, type DssExtConfig } from './dssext-config';

/**
 * `assertion`: signers are authenticated by trusted identity providers (ID tokens); clients with
 * registered keys may also vouch for signers. `trusted-client`: the e-services vouch for their signers
 * in signed request objects (deployments where the e-service is the identity provider); no identity
 * provider is required.
 */
export const IDENTITY_MODES = ['assertion', 'trusted-client'] as const;
export type IdentityMode = (typeof IDENTITY_MODES)[number];

/** This service's client id at the identity providers unless IDENTITY_CLIENT_ID (identityClientId) says otherwise. */
export const DEFAULT_IDENTITY_CLIENT_ID = 'signing-service';

/**
 * What a mode cannot do without, for the functions (IDENTITY_TRUSTED_ISSUERS, IDENTITY_CLIENT_KEYS) and for
 * a deployment (identityIssuers, identityTrustedClients): `assertion` a trusted issuer, `trusted-client` a
 * registered client. Undefined when the mode has what it needs.
 */
export function identityModeMissing(
  mode: IdentityMode,
  counts: { readonly issuers: number; readonly clients: number },
): 'issuers' | 'clients' | undefined {
  if (mode === 'assertion' && counts.issuers === 0) return 'issuers';
  if (mode === 'trusted-client' && counts.clients === 0) return 'clients';
  return undefined;
}

/** Where a trusted issuer's keys are read. */
export type JwksSource =
  | { readonly kind: 'url'; readonly url: string }
  | { readonly kind: 'ssm'; readonly parameter: string }
  | { readonly kind: 'file'; readonly path: string };

export interface TrustedIssuer {
  /** The exact `iss` value. */
  readonly issuer: string;
  readonly jwks: JwksSource;
}

/** A client that may vouch for signers, and where its request-object keys are read. */
export interface ClientKeys {
  /** The client id: the API caller (API key client locally, IAM principal on AWS) and the request object's `iss`. */
  readonly client: string;
  readonly jwks: JwksSource;
}

export interface IdentityConfig {
  readonly mode: IdentityMode;
  /**
   * The clients that may vouch for signers in request objects, and where their keys are read: being
   * registered here is what trusts a client. Every other client must send ID tokens.
   */
  readonly clientKeys: readonly ClientKeys[];
  /** This service's client id at the identity providers: the ID token's required audience. */
  readonly clientId: string;
  readonly issuers: readonly TrustedIssuer[];
  readonly algorithms: readonly string[];
  readonly clockSkewSeconds: number;
  readonly maxAuthAgeSeconds: number;
  readonly maxLifetimeSeconds: number;
  /** Longest `iat - auth_time`: a token minted from an existing session is not a login for this signature. */
  readonly maxAuthGapSeconds: number;
  readonly acceptedAcr: readonly string[];
  /** Shortest interval between two reads of an issuer's keys caused by an unknown `kid`. */
  readonly jwksRefreshIntervalSeconds: number;
  /** Keys are read again when older than this. */
  readonly jwksMaxAgeSeconds: number;
  readonly claimMapping: ClaimMapping;
  /** The DSS-Ext door's registrations and federation, when it is deployed: its evidence is verified too. */
  readonly dssExt?: DssExtConfig;
}

/** Asymmetric JWS algorithms only: `none` and the HMAC family can never be configured. */
export const ASYMMETRIC_JWS_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
] as const;

/** Swedish eID levels of assurance 3 and 4 (the Swedish eID framework's LoA URIs). */
export const DEFAULT_ACCEPTED_ACR = [
  'http://id.elegnamnden.se/loa/1.0/loa3',
  'http://id.elegnamnden.se/loa/1.0/loa4',
];

export function loadIdentityConfig(env: Env): IdentityConfig {
  const mode = oneOf(env, ENV.IDENTITY_MODE, IDENTITY_MODES, 'assertion');
  const issuers = trustedIssuers(env);
  const clients = clientKeys(env);
  const missing = identityModeMissing(mode, { issuers: issuers.length, clients: clients.length });
  if (missing === 'issuers') {
    throw new ConfigError(
      'IDENTITY_TRUSTED_ISSUERS must name at least one issuer when IDENTITY_MODE=assertion',
      'IDENTITY_TRUSTED_ISSUERS',
    );
  }
  if (missing === 'clients') {
    throw new ConfigError(
      'IDENTITY_CLIENT_KEYS must register at least one client when IDENTITY_MODE=trusted-client',
      'IDENTITY_CLIENT_KEYS',
    );
  }
  return {
    mode,
    clientKeys: clients,
    clientId: str(env, ENV.IDENTITY_CLIENT_ID, DEFAULT_IDENTITY_CLIENT_ID),
    issuers,
    algorithms: algorithms(env),
    clockSkewSeconds: int(env, 'IDENTITY_CLOCK_SKEW_SECONDS', 60, 0, 300),
    maxAuthAgeSeconds: int(env, 'IDENTITY_MAX_AUTH_AGE_SECONDS', 600, 1, 86_400),
    maxLifetimeSeconds: int(env, 'IDENTITY_MAX_LIFETIME_SECONDS', 3600, 1, 86_400),
    maxAuthGapSeconds: int(env, 'IDENTITY_MAX_AUTH_GAP_SECONDS', 30, 0, 300),
    acceptedAcr: list(env, ENV.IDENTITY_ACCEPTED_ACR, DEFAULT_ACCEPTED_ACR),
    jwksRefreshIntervalSeconds: int(env, 'IDENTITY_JWKS_REFRESH_INTERVAL_SECONDS', 30, 1, 3600),
    jwksMaxAgeSeconds: int(env, 'IDENTITY_JWKS_MAX_AGE_SECONDS', 600, 1, 86_400),
    claimMapping: claimMapping(env),
    ...dssExtOf(env),
  };
}

function list(env: Env, name: string, fallback: readonly string[]): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [...fallback];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function algorithms(env: Env): string[] {
  const values = list(env, 'IDENTITY_ALLOWED_ALGORITHMS', ['RS256', 'PS256', 'ES256', 'ES384']);
  const allowed: readonly string[] = ASYMMETRIC_JWS_ALGORITHMS;
  if (values.length === 0 || values.some((v) => !allowed.includes(v))) {
    throw new ConfigError(
      `IDENTITY_ALLOWED_ALGORITHMS must list algorithms among ${ASYMMETRIC_JWS_ALGORITHMS.join(', ')}`,
      'IDENTITY_ALLOWED_ALGORITHMS',
    );
  }
  return values;
}

/** JSON `[{"issuer": "<iss>", "jwks": "<https URL | ssm:/parameter | file:path>"}]`. */
function trustedIssuers(env: Env): TrustedIssuer[] {
  const name = ENV.IDENTITY_TRUSTED_ISSUERS;
  return jsonArray(env, name).map((entry: unknown) => {
    const e = (entry ?? {}) as { issuer?: unknown; jwks?: unknown };
    if (typeof e.issuer !== 'string' || !isFetchableUrl(e.issuer) || typeof e.jwks !== 'string') {
      throw new ConfigError(`${name}: each entry needs an issuer URL and a jwks source`, name);
    }
    return { issuer: e.issuer, jwks: parseJwksSource(e.jwks, name) };
  });
}

/** JSON `[{"client": "<client id>", "jwks": "<https URL | ssm:/parameter | file:path>"}]`. */
function clientKeys(env: Env): ClientKeys[] {
  const name = ENV.IDENTITY_CLIENT_KEYS;
  return jsonArray(env, name).map((entry: unknown) => {
    const e = (entry ?? {}) as { client?: unknown; jwks?: unknown };
    if (
      typeof e.client !== 'string' ||
      e.client.length === 0 ||
      e.client.length > 256 ||
      typeof e.jwks !== 'string'
    ) {
      throw new ConfigError(`${name}: each entry needs a client id and a jwks source`, name);
    }
    return { client: e.client, jwks: parseJwksSource(e.jwks, name) };
  });
}

/** `https://...` (or `http://` on loopback), `ssm:/parameter/name` or `file:<path>`. */
export function parseJwksSource(spec: string, variable = 'IDENTITY_TRUSTED_ISSUERS'): JwksSource {
  if (spec.startsWith('ssm:') && /^ssm:\/[A-Za-z0-9_.\-/]+$/.test(spec)) {
    return { kind: 'ssm', parameter: spec.slice(4) };
  }
  if (spec.startsWith('file:') && spec.length > 5) {
    const path = spec.slice(5);
    return { kind: 'file', path: isAbsolute(path) ? path : resolve(path) };
  }
  if (isFetchableUrl(spec)) return { kind: 'url', url: spec };
  throw new ConfigError(
    `${variable}: jwks must be an https URL (http only on loopback), ssm:/<parameter> or file:<path>`,
    variable,
  );
}

/** Keys and discovery documents are fetched over TLS, except from this machine. */
export function isFetchableUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/** IDENTITY_CLAIM_MAPPING: JSON overriding fields of the Swedish default (see ClaimMapping). */
function claimMapping(env: Env): ClaimMapping {
  const name = 'IDENTITY_CLAIM_MAPPING';
  const raw = env[name];
  if (!raw) return SWEDISH_CLAIM_MAPPING;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    throw new ConfigError(`${name} must be a JSON object`, name);
  }
  const mapping = { ...SWEDISH_CLAIM_MAPPING, ...parsed } as ClaimMapping;
  const strings = [mapping.givenName, mapping.surname, mapping.commonName, mapping.serialNumber];
  const country = mapping.country as { claim?: unknown; value?: unknown };
  if (
    strings.some((s) => typeof s !== 'string' || s.length === 0) ||
    typeof mapping.serialNumberPrefix !== 'string' ||
    !/^[A-Za-z0-9-]*$/.test(mapping.serialNumberPrefix) ||
    !(
      typeof country?.claim === 'string' ||
      (typeof country?.value === 'string' && /^[A-Z]{2}$/.test(country.value))
    )
  ) {
    throw new ConfigError(
      `${name} must map givenName, surname, commonName, serialNumber to claim names, serialNumberPrefix to [A-Za-z0-9-]*, and country to {"claim"} or {"value": "<ISO code>"}`,
      name,
    );
  }
  return mapping;
}

function dssExtOf(env: Env): { dssExt?: DssExtConfig } {
  const dssExt = loadDssExtConfig(env);
  return dssExt ? { dssExt } : {};
}
