/**
 * The local IdP as the signing service's configuration sees it: trusted by the local configuration only
 * (IDENTITY_TRUSTED_ISSUERS), its keys read from its jwks_uri on loopback.
 */
import type { IdpProcess } from './process';

export function localIdentityEnv(idp: Pick<IdpProcess, 'issuer' | 'jwksUri'>): Record<string, string> {
  return {
    IDENTITY_TRUSTED_ISSUERS: JSON.stringify([{ issuer: idp.issuer, jwks: idp.jwksUri }]),
    /** For the clients (demo, tests, benchmarks): where to log citizens in. */
    LOCAL_IDP_ISSUER: idp.issuer,
  };
}
