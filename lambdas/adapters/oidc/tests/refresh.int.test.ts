/**
 * The JWKS refresher against the local OpenID Provider (real discovery and JWKS over HTTP), with the
 * parameter store in memory (there is no SSM stand-in): issuers' keys copied once, unchanged keys not
 * rewritten, an issuer whose discovery names another issuer refused, and one issuer's failure not
 * stopping the others.
 */
import { parseJwksSource, type TrustedIssuer } from '@pipeline/config';
import { fetchJson, publicSigningKeys, refreshIssuerKeys, type KeyParameterStore } from '../src';

const issuer = (): string => process.env.LOCAL_IDP_ISSUER!;

function memoryStore(): KeyParameterStore & { readonly values: Map<string, string>; writes: number } {
  const values = new Map<string, string>();
  const store = {
    values,
    writes: 0,
    get: async (name: string) => values.get(name),
    put: async (name: string, value: string) => {
      store.writes++;
      values.set(name, value);
    },
  };
  return store;
}

test("copies the trusted issuer's public signing keys into its parameter, and only when they change", async () => {
  const trusted: TrustedIssuer[] = [{ issuer: issuer(), jwks: parseJwksSource('ssm:/idp/jwks/0') }];
  const store = memoryStore();
  expect(await refreshIssuerKeys(trusted, { fetchJson, store })).toEqual({
    updated: 1,
    unchanged: 0,
    failed: [],
  });
  const stored = JSON.parse(store.values.get('/idp/jwks/0')!) as { keys: Array<Record<string, unknown>> };
  expect(stored.keys.length).toBeGreaterThanOrEqual(2);
  for (const key of stored.keys) expect(key).not.toHaveProperty('d');
  expect(publicSigningKeys(stored).keys).toHaveLength(stored.keys.length);
  expect(await refreshIssuerKeys(trusted, { fetchJson, store })).toEqual({
    updated: 0,
    unchanged: 1,
    failed: [],
  });
  expect(store.writes).toBe(1);
});

test('an issuer whose discovery names another issuer, or that cannot be reached, is reported; the others go on', async () => {
  const store = memoryStore();
  const result = await refreshIssuerKeys(
    [
      // The same server under another name: its discovery says the real issuer.
      { issuer: issuer().replace('127.0.0.1', 'localhost'), jwks: parseJwksSource('ssm:/idp/jwks/0') },
      { issuer: 'http://127.0.0.1:9', jwks: parseJwksSource('ssm:/idp/jwks/1') },
      { issuer: issuer(), jwks: parseJwksSource('ssm:/idp/jwks/2') },
      // Keys read from a URL are not the refresher's business.
      { issuer: 'https://other.example', jwks: parseJwksSource('https://other.example/jwks') },
    ],
    { fetchJson, store },
  );
  expect(result.updated).toBe(1);
  expect(result.failed.map((f) => f.issuer)).toEqual([
    issuer().replace('127.0.0.1', 'localhost'),
    'http://127.0.0.1:9',
  ]);
  expect([...store.values.keys()]).toEqual(['/idp/jwks/2']);
});
