/**
 * The HTTP API's shape, shared by the CDK app (API Gateway resources and stage) and the local runner
 * (which plays API Gateway). Resource paths exclude the stage: the public URL is /<stage><resource>.
 */
export const API_STAGE = 'v1';

export interface RouteDefinition {
  readonly method: 'GET' | 'POST';
  readonly resource: string;
  /** Whether the caller must be authenticated (IAM in AWS, x-api-key locally). */
  readonly authenticated: boolean;
}

export const ROUTES: readonly RouteDefinition[] = [
  { method: 'POST', resource: '/sign-requests', authenticated: true },
  { method: 'GET', resource: '/sign-requests/{id}', authenticated: true },
  { method: 'POST', resource: '/sign-requests/{id}/revocation', authenticated: true },
  { method: 'GET', resource: '/health', authenticated: false },
];

/**
 * The Cloud Signature Consortium API v2 (docs/csc.md), beside the stage: /csc/v2<resource>. Its callers
 * authenticate to it (OAuth 2.0 client credentials, bearer access tokens), not to API Gateway.
 */
export const CSC_BASE_PATH = '/csc/v2';

export const CSC_ROUTES: readonly Omit<RouteDefinition, 'authenticated'>[] = [
  { method: 'GET', resource: '/info' },
  { method: 'POST', resource: '/info' },
  { method: 'POST', resource: '/oauth2/pushed_authorize' },
  { method: 'GET', resource: '/oauth2/authorize' },
  { method: 'GET', resource: '/oauth2/callback' },
  { method: 'POST', resource: '/oauth2/token' },
  { method: 'POST', resource: '/credentials/list' },
  { method: 'POST', resource: '/credentials/info' },
  { method: 'POST', resource: '/signatures/signHash' },
  { method: 'POST', resource: '/signatures/signDoc' },
  { method: 'POST', resource: '/signatures/signPolling' },
  { method: 'POST', resource: '/signatures/timestamp' },
];

/**
 * The DSS-Ext door (docs/dss-ext.md), beside the stage: /dss/v1<resource>. Browsers post to it (the
 * e-service's SignRequest, the identity provider's answer); it authenticates what they carry, not them.
 */
export const DSSEXT_BASE_PATH = '/dss/v1';

export const DSSEXT_ROUTES: readonly Omit<RouteDefinition, 'authenticated'>[] = [
  { method: 'POST', resource: '/sign' },
  { method: 'POST', resource: '/saml/acs' },
  { method: 'GET', resource: '/saml/metadata' },
  { method: 'GET', resource: '/flows/{flowId}' },
];

/**
 * The CSC methods that start an authorization (each keeps state in the CSC table) and that anyone can
 * reach, since the function authenticates the client only then: a tighter limit per source applies.
 */
export const CSC_AUTHORIZE_RESOURCES: readonly string[] = ['/oauth2/authorize', '/oauth2/pushed_authorize'];

/**
 * Largest request body accepted, in bytes (the handler and the gateway both enforce it): an 8 KiB identity
 * assertion and the rest, up to 50 documents with names of 120 characters (JSON-escaped at worst).
 */
export const MAX_BODY_BYTES = 96 * 1024;

/**
 * The OCSP responder's HTTP bindings (RFC 6960 appendix A), relative to PKI_BASE_URL: public, no
 * authentication. The CRLs and CA certificates beside them are static objects (PKI_OBJECTS).
 */
export const OCSP_ROUTES: readonly Omit<RouteDefinition, 'authenticated'>[] = [
  { method: 'POST', resource: '/ocsp' },
  { method: 'GET', resource: '/ocsp/{request+}' },
];

/** The time-stamping authority's HTTP binding (RFC 3161 3.4), relative to PKI_BASE_URL: public, throttled. */
export const TSA_ROUTES: readonly Omit<RouteDefinition, 'authenticated'>[] = [
  { method: 'POST', resource: '/tsa' },
];

/** Time-stamps per second the public TSA endpoint lets through (burst twice that), all callers together. */
export const TSA_RATE_LIMIT = 50;

/**
 * What one source address may ask of the public PKI endpoint per minute: every OCSP and TSA request, and
 * time-stamps (each an HSM signature) apart, a share of TSA_RATE_LIMIT so that one caller cannot take
 * them all. On AWS these are the WAF web ACL's rate-based rules; the local gateway plays the TSA's (a
 * token bucket per source at the same average rate, burst twice a second's worth).
 */
export const PKI_SOURCE_LIMITS = { requestsPerMinute: 1200, timeStampsPerMinute: 300 } as const;
