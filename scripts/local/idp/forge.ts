/**
 * Tokens as the local OpenID Provider would issue them, made without a login: signed with the IdP's own
 * key (its key file) or a key of the caller's. For tests that play an attacker holding a valid token shape
 * (a silent-session token, a stale one, a forged one); real logins go through scripts/client/src/oidc-login.
 */
import { readFileSync } from 'node:fs';
import { SignJWT, importJWK, type CryptoKey, type JWK } from 'jose';
import { SIGN_APPROVAL_TYPE, USER_SIGNATURE_CLAIM } from '@pipeline/core/identity';
import { TEST_CITIZENS, type TestCitizen } from './citizens';
import { CLIENT_IDS } from './clients';
import { DEFAULT_KEYS_FILE } from './keys';
import { LOA, SWEDISH_CLAIMS } from './profile';

export interface SigningKey {
  readonly key: CryptoKey;
  readonly kid: string;
}

/** The IdP's own RSA signing key (from its key file) and its published kid. */
export async function idpSigningKey(): Promise<SigningKey> {
  const keys = (JSON.parse(readFileSync(DEFAULT_KEYS_FILE, 'utf8')) as { keys: JWK[] }).keys;
  const rsa = keys.find((k) => k.kty === 'RSA')!;
  return { key: (await importJWK(rsa, 'RS256')) as CryptoKey, kid: rsa.kid! };
}

/**
 * An ID token as the IdP at `issuer` would issue it for `citizen` (Åsa by default), bound to `nonce`, with
 * claims changed (undefined removes one); signed with the IdP's key unless `signWith` says otherwise.
 * With `approval`, it carries the IdP's sign approval (userSignature) of that data and sign message hash,
 * as if it had displayed the message (which the IdP itself does only for a message it accepts).
 */
export async function forgeIdToken(options: {
  readonly issuer: string;
  readonly nonce: string;
  readonly overrides?: Record<string, unknown>;
  readonly citizen?: TestCitizen;
  readonly signWith?: SigningKey;
  readonly approval?: { readonly tbsData: string; readonly signMessageHash: string };
}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const citizen = options.citizen ?? TEST_CITIZENS[0];
  const claims: Record<string, unknown> = {
    iss: options.issuer,
    sub: citizen.sub,
    aud: CLIENT_IDS.signingService,
    iat: now,
    exp: now + 300,
    auth_time: now - 5,
    nonce: options.nonce,
    acr: LOA.loa3,
    [SWEDISH_CLAIMS.givenName]: citizen.givenName,
    [SWEDISH_CLAIMS.familyName]: citizen.familyName,
    [SWEDISH_CLAIMS.name]: citizen.name,
    [SWEDISH_CLAIMS.personalIdentityNumber]: citizen.personalIdentityNumber,
  };
  const signer = options.signWith ?? (await idpSigningKey());
  if (options.approval) {
    const approval = await new SignJWT({
      iss: options.issuer,
      sub: citizen.sub,
      aud: CLIENT_IDS.signingService,
      iat: now,
      nonce: options.nonce,
      tbs_data: options.approval.tbsData,
      sign_message_hash: options.approval.signMessageHash,
    })
      .setProtectedHeader({ alg: 'RS256', kid: signer.kid, typ: SIGN_APPROVAL_TYPE })
      .sign(signer.key);
    claims[USER_SIGNATURE_CLAIM] = Buffer.from(approval).toString('base64');
  }
  for (const [k, v] of Object.entries(options.overrides ?? {})) {
    if (v === undefined) delete claims[k];
    else claims[k] = v;
  }
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: signer.kid, typ: 'JWT' })
    .sign(signer.key);
}
