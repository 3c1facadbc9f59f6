/** The OpenID Provider login as the doors drive it: PKCE verifier as the flow's secret, the code exchanged. */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { ConfigError } from '@pipeline/config';
import { oidcLogin, relyingPartyKey } from '../oidc-login';

function relyingParty() {
  const asked: Array<Record<string, unknown>> = [];
  const exchanged: string[][] = [];
  return {
    asked,
    exchanged,
    authorizationUrl: async (request: Record<string, unknown>) => {
      asked.push(request);
      return 'https://op.example/authorize';
    },
    exchangeCode: async (code: string, verifier: string) => {
      exchanged.push([code, verifier]);
      return 'id-token';
    },
  };
}

test('begin: the provider gets the state, nonce, S256 challenge of the secret kept, and what is signed', async () => {
  const rp = relyingParty();
  const signature = { tbsData: 'ZGln', signMessage: { text: 'sign' } } as never;
  const begun = await oidcLogin(rp).begin({ state: 's', nonce: 'n', signature });
  expect(begun.location).toBe('https://op.example/authorize');
  const challenge = createHash('sha256').update(begun.secret).digest('base64url');
  expect(rp.asked).toEqual([{ state: 's', nonce: 'n', codeChallenge: challenge, signature }]);
});

test('finish: the code exchanged with the secret; an error or no code is no assertion', async () => {
  const rp = relyingParty();
  const login = oidcLogin(rp);
  expect(await login.finish({ code: 'c', state: 's' }, 'v')).toBe('id-token');
  expect(await login.finish({ error: 'access_denied', code: 'c' }, 'v')).toBeUndefined();
  expect(await login.finish({}, 'v')).toBeUndefined();
  expect(rp.exchanged).toEqual([['c', 'v']]);
});

test('relyingPartyKey: the JWS algorithm of the key; an unreadable key names the variable only', () => {
  const jwk = (key: ReturnType<typeof generateKeyPairSync>['privateKey']) =>
    JSON.stringify(key.export({ format: 'jwk' }));
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
  expect(relyingPartyKey(jwk(ec), 'CSC_IDP_CLIENT_KEY').alg).toBe('ES384');
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  expect(relyingPartyKey(jwk(rsa), 'CSC_IDP_CLIENT_KEY').alg).toBe('RS256');
  const bad = () => relyingPartyKey('{"kty":"EC","d":"secret"}', 'CSC_IDP_CLIENT_KEY');
  expect(bad).toThrow(ConfigError);
  expect(bad).toThrow('CSC_IDP_CLIENT_KEY does not hold a private JWK');
  expect(bad).not.toThrow(/secret/);
});
