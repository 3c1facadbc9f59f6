/**
 * The citizen's login at an OpenID Provider (authorization code with PKCE, the signature extension for
 * what is signed) as a door drives it (IdentityProviderLogin of @pipeline/doors): the secret kept with
 * the flow is the PKCE verifier.
 */
import { createPrivateKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { OidcRelyingParty } from '@pipeline/adapters/oidc';
import { ConfigError } from '@pipeline/config';
import type { IdentityProviderLogin } from '@pipeline/doors';

type RelyingParty = Pick<OidcRelyingParty, 'authorizationUrl' | 'exchangeCode'>;

export function oidcLogin(relyingParty: RelyingParty): IdentityProviderLogin {
  return {
    async begin({ state, nonce, signature }) {
      const pkce = OidcRelyingParty.pkce();
      const location = await relyingParty.authorizationUrl({
        state,
        nonce,
        codeChallenge: pkce.challenge,
        ...(signature ? { signature } : {}),
      });
      return { location, secret: pkce.verifier };
    },
    async finish(answer, secret) {
      // An error (or no code) is the citizen not logging in or not approving.
      if (answer.error !== undefined || typeof answer.code !== 'string') return undefined;
      return relyingParty.exchangeCode(answer.code, secret);
    },
  };
}

/**
 * The service's private JWK at the identity provider (`variable` names where it came from) and the JWS
 * algorithm it signs with; an error names the variable, never the key.
 */
export function relyingPartyKey(
  text: string,
  variable: string,
): { privateKey: KeyObject; alg: 'ES256' | 'ES384' | 'RS256' } {
  let jwk: JsonWebKey;
  let privateKey: KeyObject;
  try {
    jwk = JSON.parse(text) as JsonWebKey;
    privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
  } catch {
    throw new ConfigError(`${variable} does not hold a private JWK`, variable);
  }
  return { privateKey, alg: jwk.kty === 'EC' ? (jwk.crv === 'P-384' ? 'ES384' : 'ES256') : 'RS256' };
}
