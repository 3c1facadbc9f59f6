/**
 * An identity provider without the browser round trip, for code that drives the signing core or the CA
 * directly (integration tests, the pool benchmark): an EC P-256 key made per process, ID tokens signed
 * with it synchronously (node:crypto, compact JWS ES256) for a record's signer and binding, and the
 * verifier that trusts exactly this key. The HTTP pipeline uses the real local OpenID Provider instead.
 */
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { JwsAssertionVerifier, RefreshingJwks } from '@pipeline/adapters/oidc';
import {
  SIGN_APPROVAL_TYPE,
  SWEDISH_CLAIM_MAPPING,
  SWEDISH_OIDC_CLAIMS,
  USER_SIGNATURE_CLAIM,
  assertionNonce,
  manifestHash,
  requestBindingOf,
  type ClaimMapping,
  type SignerIdentity,
} from '@pipeline/core/identity';
import type { SignRequestRecord } from '@pipeline/core/signing';

export const DIRECT_ISSUER = 'https://direct-idp.local.invalid';
export const DIRECT_AUDIENCE = 'signing-service';
const LOA3 = 'http://id.elegnamnden.se/loa/1.0/loa3';
const KID = 'direct-1';
/** Country from a claim: test signers are not all Swedish. */
const COUNTRY_CLAIM = 'country';
const MAPPING: ClaimMapping = { ...SWEDISH_CLAIM_MAPPING, country: { claim: COUNTRY_CLAIM } };

const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const publicJwk = { ...publicKey.export({ format: 'jwk' }), kid: KID, alg: 'ES256', use: 'sig' };

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact ES256 JWS of these claims, signed with this process's key. */
export function signDirectJws(claims: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const input = `${b64({ alg: 'ES256', kid: KID, typ: 'JWT', ...header })}.${b64(claims)}`;
  const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

/** The claims of a fresh login of `signer`, bound to `nonce`; `overrides` change or (undefined) remove one. */
export function directClaims(
  signer: SignerIdentity,
  nonce: string,
  overrides: Record<string, unknown> = {},
  nowMs: number = Date.now(),
): Record<string, unknown> {
  const now = Math.floor(nowMs / 1000);
  const claims: Record<string, unknown> = {
    iss: DIRECT_ISSUER,
    sub: createHash('sha256').update(signer.serialNumber).digest('hex').slice(0, 32),
    aud: DIRECT_AUDIENCE,
    iat: now,
    exp: now + 300,
    auth_time: now,
    nonce,
    acr: LOA3,
    [SWEDISH_OIDC_CLAIMS.givenName]: signer.givenName,
    [SWEDISH_OIDC_CLAIMS.familyName]: signer.surname,
    [SWEDISH_OIDC_CLAIMS.name]: signer.commonName,
    [SWEDISH_OIDC_CLAIMS.personalIdentityNumber]: signer.serialNumber,
    [COUNTRY_CLAIM]: signer.country,
  };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete claims[k];
    else claims[k] = v;
  }
  return claims;
}

/**
 * An ID token for the record's signer, bound to the record (its id, digest and how it is signed); for a
 * record with a sign message, with this provider's approval of it (userSignature), as if it had shown it.
 * `approvalOverrides` change the approval's claims.
 */
export function directAssertion(
  record: Pick<
    SignRequestRecord,
    | 'id'
    | 'digest'
    | 'digestAlgorithm'
    | 'keyType'
    | 'signatureAlgorithm'
    | 'format'
    | 'profile'
    | 'signer'
    | 'signMessageHash'
    | 'documents'
    | 'formatOpen'
    | 'credential'
  >,
  overrides: Record<string, unknown> = {},
  approvalOverrides: Record<string, unknown> = {},
): string {
  // v2, or for a record with documents v3 (whose approval names the manifestHash).
  const nonce = assertionNonce(requestBindingOf(record));
  const claims = directClaims(record.signer, nonce);
  const approval =
    record.signMessageHash === undefined
      ? {}
      : {
          [USER_SIGNATURE_CLAIM]: Buffer.from(
            signDirectJws(
              {
                iss: claims.iss,
                sub: claims.sub,
                aud: claims.aud,
                iat: claims.iat,
                nonce,
                tbs_data: record.documents
                  ? manifestHash(record.documents, record.formatOpen)
                  : record.digest,
                sign_message_hash: record.signMessageHash,
                ...approvalOverrides,
              },
              { typ: SIGN_APPROVAL_TYPE },
            ),
          ).toString('base64'),
        };
  return signDirectJws(directClaims(record.signer, nonce, { ...approval, ...overrides }));
}

/** The verifier that trusts this process's direct identity provider (for a CA under test or bench). */
export function directAssertionVerifier(clock?: () => number): JwsAssertionVerifier {
  const keys = new RefreshingJwks(() => Promise.resolve({ keys: [publicJwk] }), {
    refreshIntervalMs: 60_000,
    maxAgeMs: 86_400_000,
  });
  return new JwsAssertionVerifier({
    issuers: new Map([[DIRECT_ISSUER, keys]]),
    algorithms: ['ES256'],
    policy: {
      audience: DIRECT_AUDIENCE,
      clockSkewSeconds: 60,
      maxAuthAgeSeconds: 600,
      acceptedAcr: [LOA3],
      maxLifetimeSeconds: 3600,
      maxAuthGapSeconds: 30,
    },
    mapping: MAPPING,
    maxLength: 8192,
    ...(clock ? { clock } : {}),
  });
}
