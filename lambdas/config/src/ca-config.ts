import { isAbsolute, resolve } from 'node:path';
import { int, oneOf, parsePinSource, str } from './config';
import { ConfigError } from './errors';
import type { Env, PinSource } from './types';

/** Where the CA certificates (PEM) live: a local directory, or an SSM parameter path in AWS. */
export type CaCertsSource =
  { readonly kind: 'file'; readonly dir: string } | { readonly kind: 'ssm'; readonly prefix: string };

export type CaKeyType = 'RSA-3072' | 'EC-P384';

export interface CaConfig {
  /** Key type of the root and issuing CA keys. */
  readonly keyType: CaKeyType;
  /** Token labels of the CA key pairs (the version is part of the label, as for the wrapping key). */
  readonly rootKeyLabel: string;
  readonly issuingKeyLabel: string;
  /** Subject of the CA certificates: `<organization> Root CA` / `<organization> Issuing CA`, C=<country>. */
  readonly organization: string;
  readonly country: string;
  readonly rootValidityDays: number;
  readonly issuingValidityDays: number;
  readonly leafValidityDays: number;
  /** certificatePolicies OID of leaf certificates. */
  readonly policyOid: string;
  /** Optional URLs for CRL distribution point and authorityInfoAccess (caIssuers, OCSP). */
  readonly crlUrl?: string;
  readonly caIssuersUrl?: string;
  readonly ocspUrl?: string;
  readonly certsSource: CaCertsSource;
  /** PIN of the HSM crypto user that holds the CA keys (may differ from the signer's). */
  readonly pinSource: PinSource;
}

/**
 * Default policy OID: under the UUID arc 2.25 (ITU-T X.667), so it is ours without registration. A
 * production CA sets its registered policy OID.
 */
export const DEFAULT_CA_POLICY_OID = '2.25.22183097487315657123782375658291702029';

const DAY = 1;
const YEAR = 365 * DAY;

export function loadCaConfig(env: Env = process.env): CaConfig {
  return {
    keyType: oneOf<CaKeyType>(env, 'CA_KEY_TYPE', ['RSA-3072', 'EC-P384'], 'RSA-3072'),
    rootKeyLabel: str(env, 'CA_ROOT_KEY_LABEL', 'ca-root-v1'),
    issuingKeyLabel: str(env, 'CA_ISSUING_KEY_LABEL', 'ca-issuing-v1'),
    organization: str(env, 'CA_ORGANIZATION', 'Signing Pipeline'),
    country: matching(env, 'CA_COUNTRY', /^[A-Z]{2}$/, 'SE', 'an ISO 3166 alpha-2 code'),
    rootValidityDays: int(env, 'CA_ROOT_VALIDITY_DAYS', 20 * YEAR, 1, 50 * YEAR),
    issuingValidityDays: int(env, 'CA_ISSUING_VALIDITY_DAYS', 10 * YEAR, 1, 50 * YEAR),
    leafValidityDays: int(env, 'CA_LEAF_VALIDITY_DAYS', 1 * YEAR, 1, 10 * YEAR),
    policyOid: matching(env, 'CA_POLICY_OID', /^[0-2](\.(0|[1-9][0-9]*))+$/, DEFAULT_CA_POLICY_OID, 'an OID'),
    crlUrl: url(env, 'CA_CRL_URL'),
    caIssuersUrl: url(env, 'CA_ISSUERS_URL'),
    ocspUrl: url(env, 'CA_OCSP_URL'),
    certsSource: parseCaCertsSource(str(env, 'CA_CERTS_SOURCE', 'file:.local/ca')),
    pinSource: caPinSource(env),
  };
}

/** `file:<dir>` (relative to the working directory) or `ssm:<parameter path prefix>`. */
export function parseCaCertsSource(spec: string): CaCertsSource {
  const [kind, ...rest] = spec.split(':');
  const value = rest.join(':');
  if (kind === 'file' && value) return { kind, dir: isAbsolute(value) ? value : resolve(value) };
  if (kind === 'ssm' && /^\/?[A-Za-z0-9_.\-/]+$/.test(value)) {
    return { kind, prefix: `/${value.replace(/^\/+|\/+$/g, '')}` };
  }
  throw new ConfigError(
    'CA_CERTS_SOURCE must be file:<dir> or ssm:<parameter path prefix>',
    'CA_CERTS_SOURCE',
  );
}

/** The CA crypto user's PIN source; locally the signer's, so one token user serves both. */
function caPinSource(env: Env): PinSource {
  const spec = env.CA_HSM_PIN_SOURCE || env.HSM_PIN_SOURCE || 'env:HSM_PIN';
  try {
    return parsePinSource(spec);
  } catch {
    throw new ConfigError(
      'CA_HSM_PIN_SOURCE must be env:<VARIABLE>, file:<path> or secretsmanager:<secret id>',
      'CA_HSM_PIN_SOURCE',
    );
  }
}

function matching(env: Env, name: string, pattern: RegExp, fallback: string, what: string): string {
  const value = str(env, name, fallback);
  if (!pattern.test(value)) throw new ConfigError(`${name} must be ${what}`, name);
  return value;
}

function url(env: Env, name: string): string | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(value);
  } catch {
    parsed = undefined;
  }
  // Relying parties fetch these without TLS trust of their own: http(s) URLs only, as IA5String-safe ASCII.
  if (!parsed || !/^https?:$/.test(parsed.protocol) || !/^[\x21-\x7e]+$/.test(value)) {
    throw new ConfigError(`${name} must be an http(s) URL`, name);
  }
  return value;
}
