/**
 * The one registry of the codes a client can see, each with its HTTP status and a human message (like
 * swedenconnect signservice's SignServiceErrorCode). Two kinds:
 *
 * - `status`: an HTTP call refused with `{ "error": { code, message } }` and that status (the API, the
 *   local gateway and API Gateway's own responses);
 * - `failedRequest`: the code a `failed` sign request carries in its `error` (read with a 200). A failed
 *   request may also carry the assertion codes (the CA verifies the assertion again) and, for a stage
 *   that failed, its cause's own code (a PKCS#11 `CKR_*` name).
 *
 * docs/api.md ("Errors of the HTTP calls", "Codes of a failed request") and openapi.json
 * (`x-error-codes`) list exactly these codes; a test holds the three together.
 */
export interface ClientCode {
  /** The HTTP status of a call refused with this code; absent for codes only a failed request carries. */
  readonly status?: number;
  /** Listed among the codes of a failed request. */
  readonly failedRequest?: true;
  /** What it means, for people (the default message of a refusal). */
  readonly message: string;
}

const FAILED = { failedRequest: true } as const;

export const CLIENT_CODES = {
  // HTTP calls
  INVALID_JSON: { status: 400, message: 'the body is not JSON' },
  VALIDATION_FAILED: { status: 400, message: 'the request does not follow the schema or a rule of the API' },
  SIGNER_NOT_ALLOWED: { status: 400, message: 'the signer comes from the identity assertion only' },
  IDENTITY_ASSERTION_REQUIRED: { status: 400, message: 'identityAssertion is required' },
  REQUEST_ID_REQUIRED: { status: 400, message: 'requestId is required' },
  ASSERTION_MALFORMED: { status: 400, message: 'the identity assertion is not a well-formed compact JWS' },
  ASSERTION_ALGORITHM_NOT_ALLOWED: { status: 400, message: "the assertion's algorithm is not allowed" },
  ASSERTION_ISSUER_UNTRUSTED: { status: 400, message: "the assertion's issuer is not trusted" },
  ASSERTION_UNKNOWN_KEY: { status: 400, message: "no key of the issuer matches the assertion's kid" },
  ASSERTION_SIGNATURE_INVALID: { status: 400, message: "the assertion's signature does not verify" },
  ASSERTION_AUDIENCE_MISMATCH: { status: 400, message: 'the assertion is not for this service' },
  ASSERTION_EXPIRED: { status: 400, message: 'the assertion has expired' },
  ASSERTION_NOT_YET_VALID: { status: 400, message: 'the assertion is not valid yet' },
  ASSERTION_AUTH_TOO_OLD: { status: 400, message: 'the login is too old' },
  ASSERTION_LOGIN_NOT_FRESH: {
    status: 400,
    message: 'the assertion comes from an existing session, not a login',
  },
  ASSERTION_LOA_INSUFFICIENT: { status: 400, message: 'the level of assurance is not accepted' },
  ASSERTION_BINDING_MISMATCH: { status: 400, message: 'the assertion is bound to another request' },
  ASSERTION_CLAIMS_INVALID: { status: 400, message: 'a claim of the assertion is missing or invalid' },
  ASSERTION_APPROVAL_MISSING: { status: 400, message: 'the assertion carries no sign approval' },
  ASSERTION_APPROVAL_INVALID: { status: 400, message: 'the sign approval is invalid' },
  ASSERTION_APPROVAL_MISMATCH: { status: 400, message: 'the sign approval is for another message or data' },
  SIGN_MESSAGE_INVALID: { status: 400, ...FAILED, message: 'the sign message is outside its rules' },
  UNAUTHENTICATED: { status: 401, message: 'missing or invalid credentials' },
  FORBIDDEN: { status: 403, message: 'invalid credentials' },
  CLIENT_NOT_TRUSTED: { status: 403, message: 'this client may not vouch for the signer' },
  NOT_FOUND: { status: 404, message: 'no such sign request' },
  ROUTE_NOT_FOUND: { status: 404, message: 'no such route' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'this method is not allowed here' },
  REQUEST_ID_CONFLICT: { status: 409, message: 'requestId already used with another body or client' },
  ASSERTION_REPLAYED: { status: 409, message: 'the identity assertion was already used for another request' },
  NOT_SIGNED: { status: 409, message: 'the request has no certificate to revoke' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'the body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Content-Type must be application/json' },
  THROTTLED: { status: 429, message: 'too many requests' },
  QUOTA_EXCEEDED: { status: 429, message: "this client's daily request quota is used up" },
  POOL_EMPTY: { status: 429, ...FAILED, message: 'no key of the type is available; retry later' },
  CLIENT_SHARE_EXCEEDED: {
    status: 429,
    message: "the key type's pool is low and this client holds its share of its open requests; retry later",
  },
  INTERNAL_ERROR: { status: 500, message: 'internal error' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'a backing service is unavailable, retry later' },
  IDENTITY_PROVIDER_UNAVAILABLE: { status: 503, message: "the identity provider's keys could not be read" },
  KEYS_UNAVAILABLE: {
    status: 503,
    message: 'no key of the type can come in time for another request; retry later',
  },
  // Failed requests
  KEY_PROFILE_MISMATCH: { ...FAILED, message: 'too many pool keys wrapped under another HSM profile' },
  KEY_PUBLIC_MISMATCH: { ...FAILED, message: 'too many pool keys stored with another public key' },
  KEY_UNWRAP_FAILED: { ...FAILED, message: 'too many pool keys the HSM could not unwrap' },
  POOL_CLAIM_FAILED: { ...FAILED, message: 'no key could be claimed from the pool' },
  KEYGEN_FAILED: { ...FAILED, message: 'the one-time key could not be generated' },
  HSM_SIGN_FAILED: { ...FAILED, message: 'the HSM could not sign' },
  CSR_FAILED: { ...FAILED, message: 'the certificate request could not be made' },
  KEY_DESTROY_FAILED: { ...FAILED, message: 'the one-time key could not be destroyed' },
  CONTAINER_FAILED: { ...FAILED, message: 'the signature container could not be built' },
  SIGN_TASK_INVALID: { ...FAILED, message: 'a sign task breaks a rule of the DSS-Ext profile' },
  SIGN_TASK_MISMATCH: { ...FAILED, message: 'a sign task does not match the digest its login approved' },
  CONTAINER_UNSUPPORTED: { ...FAILED, message: 'this signer builds no signature containers' },
  CA_UNAVAILABLE: { ...FAILED, message: 'the CA could not be reached' },
  CERTIFICATE_ISSUE_FAILED: { ...FAILED, message: 'the CA failed to issue the certificate' },
  TSA_UNAVAILABLE: { ...FAILED, message: 'the time-stamping authority did not answer' },
  VALIDATION_DATA_UNAVAILABLE: {
    ...FAILED,
    message: 'the validation data (OCSP, CRL) could not be collected',
  },
  IDENTITY_EVIDENCE_MISSING: { ...FAILED, message: 'the request carries no identity assertion for the CA' },
  ASSERTION_STALE: { ...FAILED, message: 'the assertion is older than a request may wait' },
  SIGNER_MISMATCH: { ...FAILED, message: 'the request names another signer than the assertion' },
  ASSERTION_ALREADY_USED: { ...FAILED, message: 'the assertion was already certified for another request' },
  PUBLIC_KEY_ALREADY_CERTIFIED: { ...FAILED, message: 'too many copies of used pool keys' },
  PUBLIC_KEY_NOT_CANONICAL: { ...FAILED, message: 'too many pool keys stored in a non-canonical encoding' },
  INVALID_IDENTITY: { ...FAILED, message: 'the identity is outside the certificate profile' },
  KEY_MISMATCH: { ...FAILED, message: 'the CSR key is not of the bound key type' },
  BAD_CSR: { ...FAILED, message: 'the CSR is malformed' },
  CSR_SIGNATURE_INVALID: { ...FAILED, message: 'the CSR signature does not verify (no proof of possession)' },
  ALREADY_CERTIFIED: { ...FAILED, message: 'the request was already certified for another key' },
  REQUEST_UNKNOWN: { ...FAILED, message: 'the assertion binds no such request' },
  CREDENTIAL_UNKNOWN: { ...FAILED, message: 'no one-time credential of this client and key is on record' },
  CREDENTIAL_USED: { ...FAILED, message: 'the one-time credential was used for another request' },
  CREDENTIAL_EXPIRED: { ...FAILED, message: "the one-time credential's certificate has expired" },
  CREDENTIAL_REVOKED: { ...FAILED, message: "the one-time credential's certificate is revoked" },
  CA_NOT_READY: { ...FAILED, message: 'the CA keys or certificates are missing' },
  AUDIT_WRITE_FAILED: { ...FAILED, message: "the audit log could not record the attempt's events" },
  DELIVERY_EXHAUSTED: { ...FAILED, message: "not finished after the queue's deliveries" },
  DELIVERY_LOST: { ...FAILED, message: "open with no message after the reconciler's requeues" },
} as const satisfies Readonly<Record<string, ClientCode>>;

export type ClientCodeName = keyof typeof CLIENT_CODES;

/** Codes an HTTP call may be refused with. */
export type HttpErrorCode = {
  [K in ClientCodeName]: (typeof CLIENT_CODES)[K] extends { readonly status: number } ? K : never;
}[ClientCodeName];

/** Codes a failed sign request is ended with by the service itself (the signer, delivery, the reconciler). */
export type FailureCode = {
  [K in ClientCodeName]: (typeof CLIENT_CODES)[K] extends { readonly failedRequest: true } ? K : never;
}[ClientCodeName];

/** The HTTP status of a refusal with this code. */
export function httpStatusOf(code: HttpErrorCode): number {
  return (CLIENT_CODES[code] as ClientCode).status!;
}

/** The registered message of a code. */
export function messageOf(code: ClientCodeName): string {
  return CLIENT_CODES[code].message;
}
