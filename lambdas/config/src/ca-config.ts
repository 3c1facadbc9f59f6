import { isAbsolute, resolve } from 'node:path';
import { int, objectTarget, oneOf, parsePinSource, str } from './readers';
import { ConfigError } from './errors';
import type { Env, ObjectTarget, PinSource } from './types';
import { ENV } from './env-names';

/** Where the CA certificates (PEM) live: a local directory, or an SSM parameter path in AWS. */
export type CaCertsSource =
  { readonly kind: 'file'; readonly dir: string } | { readonly kind: 'ssm'; readonly prefix: string };

export type CaKeyType = 'RSA-3072' | 'EC-P384';

/** Where CRLs and CA certificates are published: a directory (the local runner serves it) or S3. */
export type PkiPublishTarget = ObjectTarget;

/** The delegated OCSP responder's key: EC is cheap to sign with for every response. */
export type OcspKeyType = 'EC-P256' | 'EC-P384' | 'RSA-3072';

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
  /** Where relying parties fetch CRLs, CA certificates and OCSP answers (see pkiUrls). */
  readonly pkiBaseUrl: string;
  readonly publishTarget: PkiPublishTarget;
  /** The function that publishes CRLs; the CA invokes it (asynchronously) after each revocation. */
  readonly crlFunctionName: string;
  /** Token label and key type of the delegated OCSP responder's key pair. */
  readonly ocspKeyLabel: string;
  readonly ocspKeyType: OcspKeyType;
  /** The OCSP responder certificate's validity; the bootstrap renews it when a third is left. */
  readonly ocspValidityDays: number;
  /** A CRL's nextUpdate - thisUpdate; it is published more often than that (schedule, revocations). */
  readonly crlValidityHours: number;
  /** An OCSP answer's nextUpdate - thisUpdate. */
  readonly ocspResponseValiditySeconds: number;
  readonly certsSource: CaCertsSource;
  /** PIN of the HSM crypto user that holds the CA keys (may differ from the signer's). */
  readonly pinSource: PinSource;
  /**
   * The OCSP responder's own login: its crypto user's PIN and the token (slot) holding its key. The
   * responder logs in with these only, so it reaches the responder key and not the CA keys.
   */
  readonly ocspPinSource: PinSource;
  readonly ocspTokenLabel: string;
  /** The time-stamping authority's key (its own label, login and token like the OCSP responder's). */
  readonly tsaKeyLabel: string;
  readonly tsaKeyType: OcspKeyType;
  readonly tsaPinSource: PinSource;
  readonly tsaTokenLabel: string;
  /** The TSA certificate's validity (issued by the root); renewed when a third is left. */
  readonly tsaValidityDays: number;
  /** The TSA policy OID every token names (RFC 3161 TSTInfo.policy). */
  readonly tsaPolicyOid: string;
  /** The accuracy stated in every token: genTime is within this many seconds of UTC. */
  readonly tsaAccuracySeconds: number;
  /**
   * The CA's own bound on how old an identity assertion may be when it certifies (its `iat` and
   * `auth_time`): how long a request may wait in the queue. Older: the request ends ASSERTION_STALE.
   */
  readonly maxAssertionAgeSeconds: number;
  /**
   * How long the register of certified public keys remembers a key: longer than any pool key may live
   * (POOL_KEY_MAX_AGE_SECONDS is at most 365 days), so a restored pool key is refused for as long as it
   * could be claimed.
   */
  readonly publicKeyRegisterDays: number;
}

/**
 * Default policy OID: under 1.3.6.1.4.1.32473, the private enterprise number IANA reserves for
 * documentation (RFC 5612), short enough for every parser. It names no real policy: a production CA sets
 * its own registered OID (CA_POLICY_OID). (The X.660 example arc 2.999 is refused by pkilint's decoder.)
 */
export const DEFAULT_CA_POLICY_OID = '1.3.6.1.4.1.32473.1.1';

/** Default TSA policy OID, under the same documentation arc: a production TSA sets its own. */
export const DEFAULT_TSA_POLICY_OID = '1.3.6.1.4.1.32473.1.2';

const DAY = 1;
const YEAR = 365 * DAY;

export function loadCaConfig(env: Env): CaConfig {
  return {
    keyType: oneOf<CaKeyType>(env, 'CA_KEY_TYPE', ['RSA-3072', 'EC-P384'], 'RSA-3072'),
    rootKeyLabel: str(env, 'CA_ROOT_KEY_LABEL', 'ca-root-v1'),
    issuingKeyLabel: str(env, 'CA_ISSUING_KEY_LABEL', 'ca-issuing-v1'),
    organization: str(env, 'CA_ORGANIZATION', 'Signing Pipeline'),
    country: matching(env, 'CA_COUNTRY', /^[A-Z]{2}$/, 'SE', 'an ISO 3166 alpha-2 code'),
    rootValidityDays: int(env, 'CA_ROOT_VALIDITY_DAYS', 20 * YEAR, 1, 50 * YEAR),
    issuingValidityDays: int(env, 'CA_ISSUING_VALIDITY_DAYS', 10 * YEAR, 1, 50 * YEAR),
    leafValidityDays: int(env, 'CA_LEAF_VALIDITY_DAYS', 1, 1, 10 * YEAR),
    policyOid: oid(env, 'CA_POLICY_OID', DEFAULT_CA_POLICY_OID),
    pkiBaseUrl: pkiBaseUrl(env),
    publishTarget: objectTarget(str(env, ENV.PKI_PUBLISH_TARGET, 'file:.local/pki'), ENV.PKI_PUBLISH_TARGET),
    crlFunctionName: str(env, ENV.CRL_FUNCTION_NAME, 'crl'),
    ocspKeyLabel: str(env, 'CA_OCSP_KEY_LABEL', 'ocsp-signer-v1'),
    ocspKeyType: oneOf<OcspKeyType>(env, 'CA_OCSP_KEY_TYPE', ['EC-P256', 'EC-P384', 'RSA-3072'], 'EC-P256'),
    ocspValidityDays: int(env, 'CA_OCSP_VALIDITY_DAYS', 90, 2, 366),
    crlValidityHours: int(env, 'CA_CRL_VALIDITY_HOURS', 24, 1, 24 * 31),
    ocspResponseValiditySeconds: int(env, 'CA_OCSP_RESPONSE_VALIDITY_SECONDS', 3600, 60, 7 * 86_400),
    certsSource: parseCaCertsSource(str(env, ENV.CA_CERTS_SOURCE, 'file:.local/ca')),
    pinSource: caPinSource(env),
    ocspPinSource: servicePinSource(env, ENV.OCSP_HSM_PIN_SOURCE),
    ocspTokenLabel: str(env, 'OCSP_HSM_TOKEN_LABEL', str(env, ENV.HSM_TOKEN_LABEL, 'signing-pipeline')),
    tsaKeyLabel: str(env, 'CA_TSA_KEY_LABEL', 'tsa-signer-v1'),
    tsaKeyType: oneOf<OcspKeyType>(env, 'CA_TSA_KEY_TYPE', ['EC-P256', 'EC-P384', 'RSA-3072'], 'EC-P256'),
    tsaPinSource: servicePinSource(env, ENV.TSA_HSM_PIN_SOURCE),
    tsaTokenLabel: str(env, 'TSA_HSM_TOKEN_LABEL', str(env, ENV.HSM_TOKEN_LABEL, 'signing-pipeline')),
    tsaValidityDays: int(env, 'CA_TSA_VALIDITY_DAYS', 10 * YEAR, 2, 20 * YEAR),
    tsaPolicyOid: oid(env, 'CA_TSA_POLICY_OID', DEFAULT_TSA_POLICY_OID),
    tsaAccuracySeconds: int(env, 'CA_TSA_ACCURACY_SECONDS', 1, 1, 60),
    maxAssertionAgeSeconds: int(env, 'CA_MAX_ASSERTION_AGE_SECONDS', 600, 10, 86_400),
    publicKeyRegisterDays: int(env, 'CA_PUBLIC_KEY_REGISTER_DAYS', 400, YEAR + 1, 10 * YEAR),
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

/** The PIN source of a service with its own crypto user (OCSP responder, TSA); without one, the CA user's. */
function servicePinSource(env: Env, name: 'OCSP_HSM_PIN_SOURCE' | 'TSA_HSM_PIN_SOURCE'): PinSource {
  const spec = env[name];
  if (!spec) return caPinSource(env);
  try {
    return parsePinSource(spec);
  } catch {
    throw new ConfigError(`${name} must be env:<VARIABLE>, file:<path> or secretsmanager:<secret id>`, name);
  }
}

function matching(env: Env, name: string, pattern: RegExp, fallback: string, what: string): string {
  const value = str(env, name, fallback);
  if (!pattern.test(value)) throw new ConfigError(`${name} must be ${what}`, name);
  return value;
}

/** Arcs must fit in 32 bits: many X.509 parsers (and both CA-world linters) refuse larger ones. */
function oid(env: Env, name: string, fallback: string): string {
  const value = matching(env, name, /^[0-2](\.(0|[1-9][0-9]*))+$/, fallback, 'an OID');
  if (value.split('.').some((arc) => Number(arc) > 0xffffffff)) {
    throw new ConfigError(`${name} must have arcs of at most 32 bits`, name);
  }
  return value;
}

/**
 * PKI_BASE_URL: plain http (RFC 5280 4.2.1.13 and 4.2.2.1: relying parties fetch revocation data and CA
 * certificates without TLS, whose own validation would need them) and IA5String-safe ASCII.
 */
function pkiBaseUrl(env: Env): string {
  const name = ENV.PKI_BASE_URL;
  const value = str(env, name, 'http://127.0.0.1:8080/pki').replace(/\/+$/, '');
  let parsed: URL | undefined;
  try {
    parsed = new URL(value);
  } catch {
    parsed = undefined;
  }
  if (
    !parsed ||
    parsed.protocol !== 'http:' ||
    !/^[\x21-\x7e]+$/.test(value) ||
    parsed.search ||
    parsed.hash
  ) {
    throw new ConfigError(`${name} must be an http URL without query or fragment`, name);
  }
  return value;
}

/** What the certificates point at, under PKI_BASE_URL. */
export interface PkiUrls {
  /** The issuing CA's CRL and certificate, and the OCSP responder: in leaf certificates. */
  readonly issuingCrl: string;
  readonly issuingCertificate: string;
  readonly ocsp: string;
  /** The time-stamping authority (RFC 3161 over HTTP). */
  readonly tsa: string;
  /** The root's CRL and certificate: in the issuing CA certificate. */
  readonly rootCrl: string;
  readonly rootCertificate: string;
}

export function pkiUrls(baseUrl: string): PkiUrls {
  return {
    issuingCrl: `${baseUrl}/issuing.crl`,
    issuingCertificate: `${baseUrl}/issuing.crt`,
    ocsp: `${baseUrl}/ocsp`,
    tsa: `${baseUrl}/tsa`,
    rootCrl: `${baseUrl}/root.crl`,
    rootCertificate: `${baseUrl}/root.crt`,
  };
}
