import { isFetchableUrl, type TrustedIssuer } from '@pipeline/config';
import { publicSigningKeys } from './jwks';

/** Where the refresher keeps each issuer's keys for functions that cannot reach the issuer. */
export interface KeyParameterStore {
  get(name: string): Promise<string | undefined>;
  put(name: string, value: string): Promise<void>;
}

export interface RefreshResult {
  readonly updated: number;
  readonly unchanged: number;
  /** Issuers whose keys could not be refreshed (the previous keys stay in place). */
  readonly failed: ReadonlyArray<{ readonly issuer: string; readonly reason: string }>;
}

/**
 * Copies each trusted issuer's published signing keys into its parameter: discovery document at
 * `<issuer>/.well-known/openid-configuration` (its `issuer` must equal the configured one, OpenID Connect
 * Discovery 4.3), then its `jwks_uri` (HTTPS), reduced to public signature keys. Only issuers whose keys
 * live in a parameter are refreshed; a parameter is written only when the keys changed. One issuer's
 * failure leaves its previous keys and does not stop the others.
 */
export async function refreshIssuerKeys(
  issuers: readonly TrustedIssuer[],
  deps: { readonly fetchJson: (url: string) => Promise<unknown>; readonly store: KeyParameterStore },
): Promise<RefreshResult> {
  let updated = 0;
  let unchanged = 0;
  const failed: Array<{ issuer: string; reason: string }> = [];
  for (const trusted of issuers) {
    if (trusted.jwks.kind !== 'ssm') continue;
    try {
      const discovery = (await deps.fetchJson(
        `${trusted.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
      )) as { issuer?: unknown; jwks_uri?: unknown };
      if (discovery?.issuer !== trusted.issuer) throw new Error('discovery names another issuer');
      const jwksUri = discovery.jwks_uri;
      if (typeof jwksUri !== 'string' || !isFetchableUrl(jwksUri)) throw new Error('jwks_uri is not https');
      const keys = publicSigningKeys(await deps.fetchJson(jwksUri)).keys;
      if (keys.length === 0) throw new Error('the issuer publishes no signature keys');
      // Sorted by kid, so the same keys in another order do not count as a change.
      const value = JSON.stringify({
        keys: [...keys].sort((a, b) => String(a.kid).localeCompare(String(b.kid))),
      });
      if ((await deps.store.get(trusted.jwks.parameter)) === value) {
        unchanged++;
      } else {
        await deps.store.put(trusted.jwks.parameter, value);
        updated++;
      }
    } catch (err) {
      failed.push({ issuer: trusted.issuer, reason: (err as Error)?.message ?? 'error' });
    }
  }
  return { updated, unchanged, failed };
}
