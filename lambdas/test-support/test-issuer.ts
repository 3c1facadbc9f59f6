/**
 * A throwaway identity provider for the verifier's unit tests: key pairs made with jose and ID tokens
 * signed with them, with the claims a Swedish eID assertion carries. The integration tests use the real
 * local OpenID Provider instead.
 */
import { createHash } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JSONWebKeySet, type JWK } from 'jose';
import {
  SIGN_APPROVAL_TYPE,
  SWEDISH_OIDC_CLAIMS,
  USER_SIGNATURE_CLAIM,
  assertionNonce,
  signMessageHash,
  type AssertionBinding,
  type AssertionReplayStore,
  type AssertionVerifier,
  type SignMessage,
} from '@pipeline/core/identity';

export const ISSUER = 'https://idp.example.test';
export const AUDIENCE = 'signing-service';
export const LOA3 = 'http://id.elegnamnden.se/loa/1.0/loa3';

export interface TestKey {
  readonly kid: string;
  readonly alg: 'RS256' | 'ES256';
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function testKey(alg: 'RS256' | 'ES256', kid: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

export function jwksOf(...keys: TestKey[]): JSONWebKeySet {
  return { keys: keys.map((k) => k.publicJwk) };
}

export const BINDING: AssertionBinding = {
  requestId: '0b7d2a4e-9f3c-4d1a-8e2b-5c6d7e8f9a0b',
  digestAlgorithm: 'SHA-256',
  digest: Buffer.alloc(32, 7).toString('base64'),
  keyType: 'EC-P256',
  signatureAlgorithm: 'ECDSA',
  format: 'raw',
};
export const NONCE = assertionNonce(BINDING);

/** Claims of a valid assertion for Åsa Öberg at `nowSeconds`, with overrides (undefined removes one). */
export function claims(nowSeconds: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    iss: ISSUER,
    sub: 'c0ffee-subject-1',
    aud: AUDIENCE,
    iat: nowSeconds - 5,
    exp: nowSeconds + 300,
    auth_time: nowSeconds - 10,
    nonce: NONCE,
    acr: LOA3,
    [SWEDISH_OIDC_CLAIMS.givenName]: 'Åsa',
    [SWEDISH_OIDC_CLAIMS.familyName]: 'Öberg',
    [SWEDISH_OIDC_CLAIMS.name]: 'Åsa Öberg',
    [SWEDISH_OIDC_CLAIMS.personalIdentityNumber]: '197802022389',
  };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return base;
}

export function sign(
  key: TestKey,
  payload: Record<string, unknown>,
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })
    .sign(key.privateKey);
}

/** A request with a sign message: its binding, nonce and the approval the ID token must carry. */
export const SIGN_MESSAGE: SignMessage = {
  text: 'Jag godkänner deklarationen för 2026.',
  mimeType: 'text/plain',
};
export const SIGNED_BINDING: AssertionBinding = {
  ...BINDING,
  signMessageHash: signMessageHash(SIGN_MESSAGE),
};
export const SIGNED_NONCE = assertionNonce(SIGNED_BINDING);
export const EXPECTED_APPROVAL = { tbsData: BINDING.digest, signMessageHash: signMessageHash(SIGN_MESSAGE) };

/** A sign approval's claims for the login of claims(nowSeconds) with SIGNED_NONCE, with overrides. */
export function approvalClaims(
  nowSeconds: number,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const base: Record<string, unknown> = {
    iss: ISSUER,
    sub: 'c0ffee-subject-1',
    aud: AUDIENCE,
    iat: nowSeconds - 7,
    nonce: SIGNED_NONCE,
    tbs_data: BINDING.digest,
    sign_message_hash: signMessageHash(SIGN_MESSAGE),
  };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return base;
}

/** The userSignature claim's value: base64 of the approval, a JWS of type sign-approval+jwt. */
export async function userSignature(
  key: TestKey,
  payload: Record<string, unknown>,
  header: Record<string, unknown> = {},
): Promise<string> {
  const jws = await sign(key, payload, { typ: SIGN_APPROVAL_TYPE, ...header });
  return Buffer.from(jws).toString('base64');
}

/** ID token claims of a sign login: SIGNED_NONCE and the given userSignature. */
export function signedClaims(
  nowSeconds: number,
  approval: unknown,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return claims(nowSeconds, { nonce: SIGNED_NONCE, [USER_SIGNATURE_CLAIM]: approval, ...overrides });
}

/** The replay store's rules in memory (the DynamoDB adapter is tested against DynamoDB Local). */
export function memoryAssertionStore(): AssertionReplayStore & { readonly used: Map<string, string> } {
  const used = new Map<string, string>();
  return {
    used,
    claim: async (key, use) => {
      const owner = `${use.clientId} ${use.requestId}`;
      if (used.has(key) && used.get(key) !== owner) return false;
      used.set(key, owner);
      return true;
    },
  };
}

/** For the API's unit tests: accepts any token as a login of Anna Berg (each token its own assertion). */
export const anyAssertion: AssertionVerifier = {
  verify: async (token) => {
    const hash = createHash('sha256').update(token).digest('hex');
    return {
      signer: {
        commonName: 'Anna Berg',
        givenName: 'Anna',
        surname: 'Berg',
        serialNumber: '197001011234',
        country: 'SE',
      },
      evidence: {
        source: 'assertion',
        issuer: ISSUER,
        subject: 'anna',
        assertionHash: hash,
        acr: 'loa3',
        authTime: Date.now(),
      },
      replayKey: hash,
      expiresAt: Date.now() + 300_000,
      issuedAt: Date.now(),
      authContext: {
        identityProvider: ISSUER,
        authenticationInstant: Date.now(),
        authnContextClassRef: 'loa3',
        assertionRef: hash,
        serviceId: AUDIENCE,
        attributes: [],
      },
    };
  },
};
