import { X509Certificate } from 'node:crypto';
import { ConfigError } from './errors';
import { ENV } from './env-names';
import { isFetchableUrl } from './identity-config';
import { int, jsonArray, secretSource, str } from './readers';
import type { Env, SecretSource } from './types';

/** The certificate types an e-service may ask for (ELN-0609 CertRequestProperties/@CertType). */
const CERT_TYPES = ['PKC', 'QC', 'QC/SSCD'] as const;

/** An e-service's registration (docs/dss-ext.md), as DSSEXT_CLIENTS has it: public data only. */
export interface DssExtClient {
  readonly entityId: string;
  readonly certificates: readonly X509Certificate[];
  readonly returnUrls: readonly string[];
  readonly acceptedLoa: readonly string[];
  readonly certTypes: readonly (typeof CERT_TYPES)[number][];
  readonly includeAssertion: boolean;
}

/**
 * The DSS-Ext door's settings that the door and the CA share: the CA verifies the e-service's SignRequest
 * and the identity provider's assertion itself, so it reads the same registrations and federation.
 */
export interface DssExtConfig {
  /** The door's public base URL (`.../dss/v1`): its SAML SP's ACS and metadata are under it. */
  readonly baseUrl: string;
  /** Our SignService entityID: a SignRequest for another service is refused. */
  readonly signServiceEntityId: string;
  readonly sp: { readonly entityId: string; readonly acsUrl: string };
  readonly clients: readonly DssExtClient[];
  /** The federation's metadata (file: or secretsmanager:), signed by its operator. */
  readonly federationMetadata: SecretSource;
  /** The federation operator's certificates: the metadata must be signed with one of their keys. */
  readonly metadataTrust: readonly X509Certificate[];
  /** The levels of assurance asked for when a SignRequest names none. */
  readonly defaultLoa: readonly string[];
  readonly maxRequestAgeSeconds: number;
  readonly clockSkewSeconds: number;
  /** How long a citizen's login may take, from the SignRequest to the identity provider's answer. */
  readonly flowSeconds: number;
}

/** The door's own secret: the key (PEM) and certificate that sign its AuthnRequests and SignResponses. */
export interface DssExtSecretSources {
  readonly serviceKey: SecretSource;
}

const LOA3 = 'http://id.elegnamnden.se/loa/1.0/loa3';

/** The DSS-Ext settings when DSSEXT_BASE_URL is set; undefined when the door is not deployed. */
export function loadDssExtConfig(env: Env): DssExtConfig | undefined {
  if (!env[ENV.DSSEXT_BASE_URL]) return undefined;
  const baseUrl = str(env, ENV.DSSEXT_BASE_URL).replace(/\/$/, '');
  if (!isFetchableUrl(baseUrl)) {
    throw new ConfigError(
      'DSSEXT_BASE_URL must be an https URL (http only on loopback)',
      ENV.DSSEXT_BASE_URL,
    );
  }
  return {
    baseUrl,
    signServiceEntityId: str(env, ENV.DSSEXT_SIGN_SERVICE_ENTITY_ID),
    sp: { entityId: str(env, 'DSSEXT_SP_ENTITY_ID', `${baseUrl}/saml/sp`), acsUrl: `${baseUrl}/saml/acs` },
    clients: dssExtClients(env),
    federationMetadata: secretSource(env, ENV.DSSEXT_FEDERATION_METADATA, 'the signed federation metadata'),
    metadataTrust: pemCertificates(str(env, ENV.DSSEXT_METADATA_TRUST), ENV.DSSEXT_METADATA_TRUST),
    defaultLoa: (env.DSSEXT_DEFAULT_LOA || LOA3).split(',').map((l) => l.trim()),
    maxRequestAgeSeconds: int(env, 'DSSEXT_MAX_REQUEST_AGE_SECONDS', 180, 10, 3600),
    clockSkewSeconds: int(env, 'DSSEXT_CLOCK_SKEW_SECONDS', 60, 0, 300),
    flowSeconds: int(env, 'DSSEXT_FLOW_TTL_SECONDS', 900, 60, 3600),
  };
}

export function dssExtSecretSources(env: Env): DssExtSecretSources {
  return { serviceKey: secretSource(env, ENV.DSSEXT_SERVICE_KEY, 'a PEM private key and certificate') };
}

/**
 * JSON `[{"entityId", "certificates": [PEM], "returnUrls": [...], "acceptedLoa"?: [...], "certTypes"?:
 * [...], "includeAssertion"?: bool}]`.
 */
function dssExtClients(env: Env): DssExtClient[] {
  const name = ENV.DSSEXT_CLIENTS;
  const clients = jsonArray(env, name).map((entry: unknown) => {
    const e = (entry ?? {}) as Record<string, unknown>;
    const strings = (v: unknown): v is string[] =>
      Array.isArray(v) && v.every((x) => typeof x === 'string' && x.length > 0);
    const certTypes = e.certTypes ?? ['PKC'];
    if (
      typeof e.entityId !== 'string' ||
      e.entityId.length === 0 ||
      !strings(e.certificates) ||
      e.certificates.length === 0 ||
      !strings(e.returnUrls) ||
      e.returnUrls.length === 0 ||
      !e.returnUrls.every((u) => /^https?:\/\//.test(u)) ||
      !(e.acceptedLoa === undefined || strings(e.acceptedLoa)) ||
      !strings(certTypes) ||
      !certTypes.every((t) => (CERT_TYPES as readonly string[]).includes(t)) ||
      !(e.includeAssertion === undefined || typeof e.includeAssertion === 'boolean')
    ) {
      throw new ConfigError(
        `${name}: each entry needs entityId, certificates (PEM) and returnUrls; acceptedLoa, certTypes (${CERT_TYPES.join(', ')}) and includeAssertion are optional`,
        name,
      );
    }
    return {
      entityId: e.entityId,
      certificates: e.certificates.flatMap((pem) => pemCertificates(pem, name)),
      returnUrls: e.returnUrls,
      acceptedLoa: (e.acceptedLoa as string[] | undefined) ?? [],
      certTypes: certTypes as DssExtClient['certTypes'],
      includeAssertion: e.includeAssertion === true,
    };
  });
  if (clients.length === 0) throw new ConfigError(`${name} must register at least one e-service`, name);
  return clients;
}

function pemCertificates(text: string, name: string): X509Certificate[] {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  try {
    if (blocks.length === 0) throw new Error('none');
    return blocks.map((pem) => new X509Certificate(pem));
  } catch {
    throw new ConfigError(`${name} must hold PEM certificates`, name);
  }
}
