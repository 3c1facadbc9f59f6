/**
 * The ID token verifier over a local JWKS (no network): every refusal the API turns into its own code,
 * key rotation and the bounded refetch on unknown key ids, and a property over mutated tokens.
 */
import { createHmac, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { exportJWK, generateKeyPair, type JSONWebKeySet } from 'jose';
import {
  AssertionError,
  IdentityProviderUnavailableError,
  SWEDISH_CLAIM_MAPPING,
  SWEDISH_OIDC_CLAIMS,
  assertionNonce,
} from '@pipeline/core/identity';
import { JwsAssertionVerifier, RefreshingJwks } from '../src';
import {
  AUDIENCE,
  BINDING,
  EXPECTED_APPROVAL,
  ISSUER,
  LOA3,
  NONCE,
  SIGNED_NONCE,
  approvalClaims,
  claims,
  jwksOf,
  sign,
  signedClaims,
  testKey,
  userSignature,
  type TestKey,
} from '../../../test-support/test-issuer';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const now = Math.floor(NOW / 1000);

let rsa: TestKey;
let ec: TestKey;
beforeAll(async () => {
  rsa = await testKey('RS256', 'rsa-1');
  ec = await testKey('ES256', 'ec-1');
});

/** A verifier over a JWKS the test can change, counting fetches. */
function setup(options: { jwks?: () => JSONWebKeySet; clock?: () => number } = {}) {
  const fetches = { count: 0 };
  let published = options.jwks ?? (() => jwksOf(rsa, ec));
  const clock = options.clock ?? (() => NOW);
  const keys = new RefreshingJwks(
    async () => {
      fetches.count++;
      return published();
    },
    { refreshIntervalMs: 30_000, maxAgeMs: 600_000, clock },
  );
  const verifier = new JwsAssertionVerifier({
    issuers: new Map([[ISSUER, keys]]),
    algorithms: ['RS256', 'PS256', 'ES256', 'ES384'],
    policy: {
      audience: AUDIENCE,
      clockSkewSeconds: 60,
      maxAuthAgeSeconds: 600,
      acceptedAcr: [LOA3, 'http://id.elegnamnden.se/loa/1.0/loa4'],
      maxLifetimeSeconds: 3600,
      maxAuthGapSeconds: 30,
    },
    mapping: SWEDISH_CLAIM_MAPPING,
    maxLength: 8192,
    clock,
  });
  return { verifier, fetches, publish: (f: () => JSONWebKeySet) => (published = f) };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AssertionError) return err.code;
    throw err;
  }
  throw new Error('the assertion was accepted');
}

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

test('a valid RS256 or ES256 assertion yields the signer from its claims and the evidence, not the token', async () => {
  const { verifier } = setup();
  for (const key of [rsa, ec]) {
    const token = await sign(key, claims(now));
    const verified = await verifier.verify(token, NONCE);
    expect(verified.signer).toEqual({
      commonName: 'Åsa Öberg',
      givenName: 'Åsa',
      surname: 'Öberg',
      serialNumber: '197802022389',
      country: 'SE',
    });
    expect(verified.evidence).toMatchObject({
      source: 'assertion',
      issuer: ISSUER,
      subject: 'c0ffee-subject-1',
      acr: LOA3,
      authTime: (now - 10) * 1000,
    });
    expect(verified.evidence.assertionHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(verified)).not.toContain(token);
    expect(verified.expiresAt).toBe((now + 300 + 60) * 1000);
    // The certificate's authentication context: all of it from the verified token and this verifier.
    expect(verified.authContext).toEqual({
      identityProvider: ISSUER,
      authenticationInstant: (now - 10) * 1000,
      authnContextClassRef: LOA3,
      assertionRef: verified.evidence.assertionHash,
      serviceId: AUDIENCE,
      attributes: [
        { field: 'surname', name: 'urn:oid:2.5.4.4', friendlyName: 'sn', value: 'Öberg' },
        { field: 'givenName', name: 'urn:oid:2.5.4.42', friendlyName: 'givenName', value: 'Åsa' },
        {
          field: 'serialNumber',
          name: 'urn:oid:1.2.752.29.4.13',
          friendlyName: 'personalIdentityNumber',
          value: '197802022389',
        },
        {
          field: 'commonName',
          name: 'urn:oid:2.16.840.1.113730.3.1.241',
          friendlyName: 'displayName',
          value: 'Åsa Öberg',
        },
      ],
    });
  }
});

test('the replay key depends on the claims, not on the bytes of the token', async () => {
  const { verifier } = setup();
  const payload = claims(now);
  const first = await verifier.verify(await sign(ec, payload), NONCE);
  // Another signature over the same claims (ECDSA is randomised): another token string, same assertion.
  const second = await verifier.verify(await sign(ec, payload), NONCE);
  expect(second.evidence.assertionHash).not.toBe(first.evidence.assertionHash);
  expect(second.replayKey).toBe(first.replayKey);
  const otherLogin = await verifier.verify(await sign(ec, claims(now, { iat: now - 4 })), NONCE);
  expect(otherLogin.replayKey).not.toBe(first.replayKey);
});

test('alg none, HMAC with the RSA public key as secret, and unlisted algorithms are refused before any key is used', async () => {
  const { verifier, fetches } = setup();
  const payload = b64url(claims(now));
  expect(await refusal(verifier.verify(`${b64url({ alg: 'none' })}.${payload}.`, NONCE))).toBe(
    'ASSERTION_ALGORITHM_NOT_ALLOWED',
  );
  // The classic confusion attack: HS256 keyed with the issuer's RSA public key (PEM), which is public.
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = publicKey.export({ type: 'spki', format: 'pem' });
  const header = b64url({ alg: 'HS256', kid: rsa.kid });
  const mac = createHmac('sha256', pem).update(`${header}.${payload}`).digest('base64url');
  expect(await refusal(verifier.verify(`${header}.${payload}.${mac}`, NONCE))).toBe(
    'ASSERTION_ALGORITHM_NOT_ALLOWED',
  );
  // Signed with a real key, but under an algorithm the configuration does not list.
  const rs512 = b64url({ alg: 'RS512', kid: rsa.kid });
  const signature = (await sign(rsa, claims(now))).split('.')[2];
  expect(await refusal(verifier.verify(`${rs512}.${payload}.${signature}`, NONCE))).toBe(
    'ASSERTION_ALGORITHM_NOT_ALLOWED',
  );
  expect(fetches.count).toBe(0);
});

test('an untrusted issuer is refused without fetching anything', async () => {
  const { verifier, fetches } = setup();
  const token = await sign(rsa, claims(now, { iss: 'https://evil.example.test' }));
  expect(await refusal(verifier.verify(token, NONCE))).toBe('ASSERTION_ISSUER_UNTRUSTED');
  expect(await refusal(verifier.verify(await sign(rsa, claims(now, { iss: undefined })), NONCE))).toBe(
    'ASSERTION_ISSUER_UNTRUSTED',
  );
  expect(fetches.count).toBe(0);
});

test('a key the issuer does not publish: unknown kid, or a known kid with another key, or a key embedded in the header', async () => {
  const { verifier } = setup();
  const attacker = await testKey('RS256', 'attacker');
  expect(await refusal(verifier.verify(await sign(attacker, claims(now)), NONCE))).toBe(
    'ASSERTION_UNKNOWN_KEY',
  );
  const stolenKid = { ...attacker, kid: rsa.kid };
  expect(await refusal(verifier.verify(await sign(stolenKid, claims(now)), NONCE))).toBe(
    'ASSERTION_SIGNATURE_INVALID',
  );
  const embedded = await sign(stolenKid, claims(now), { jwk: attacker.publicJwk });
  expect(await refusal(verifier.verify(embedded, NONCE))).toBe('ASSERTION_SIGNATURE_INVALID');
});

test('an unknown kid is refetched at most once per interval; a rotated key is found by that refetch', async () => {
  let clock = NOW;
  const { verifier, fetches, publish } = setup({ clock: () => clock });
  await verifier.verify(await sign(rsa, claims(now)), NONCE);
  expect(fetches.count).toBe(1);
  // A flood of invented key ids costs one fetch per interval (the first read counts as this interval's).
  clock += 31_000;
  const invented = await testKey('RS256', 'invented');
  for (let i = 0; i < 5; i++) {
    expect(
      await refusal(verifier.verify(await sign({ ...invented, kid: `k${i}` }, claims(now)), NONCE)),
    ).toBe('ASSERTION_UNKNOWN_KEY');
  }
  expect(fetches.count).toBe(2);
  // The issuer rotates: a token under the new key is accepted once the interval allows a refetch.
  const rotated = await testKey('ES256', 'ec-2');
  publish(() => jwksOf(rotated, rsa));
  expect(await refusal(verifier.verify(await sign(rotated, claims(now)), NONCE))).toBe(
    'ASSERTION_UNKNOWN_KEY',
  );
  clock += 31_000;
  const verified = await verifier.verify(await sign(rotated, claims(now)), NONCE);
  expect(verified.evidence).toMatchObject({ source: 'assertion', issuer: ISSUER });
  expect(fetches.count).toBe(3);
});

test('keys older than their maximum age are read again; a failed read keeps the keys it has', async () => {
  let clock = NOW;
  let down = false;
  const { verifier, fetches } = setup({
    clock: () => clock,
    jwks: () => {
      if (down) throw new Error('connection refused');
      return jwksOf(rsa, ec);
    },
  });
  await verifier.verify(await sign(rsa, claims(now)), NONCE);
  clock += 601_000;
  down = true;
  await verifier.verify(await sign(rsa, claims(now + 601)), NONCE);
  expect(fetches.count).toBe(2);
});

test('an issuer whose keys cannot be read at all is unavailable; a JWKS with private key material is refused', async () => {
  const down = setup({
    jwks: () => {
      throw new Error('connection refused');
    },
  });
  await expect(down.verifier.verify(await sign(rsa, claims(now)), NONCE)).rejects.toBeInstanceOf(
    IdentityProviderUnavailableError,
  );
  // Entries of no usable type are skipped; private key material makes the whole set unusable.
  const odd = setup({ jwks: () => ({ keys: [rsa.publicJwk, { kid: 'no-kty' }, { kty: 'oct', kid: 'x' }] }) });
  await odd.verifier.verify(await sign(rsa, claims(now)), NONCE);
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const privateJwk = await exportJWK(privateKey);
  const leaky = setup({ jwks: () => ({ keys: [rsa.publicJwk, privateJwk] }) });
  await expect(leaky.verifier.verify(await sign(rsa, claims(now)), NONCE)).rejects.toBeInstanceOf(
    IdentityProviderUnavailableError,
  );
});

test.each([
  ['wrong audience', { aud: 'other-service' }, 'ASSERTION_AUDIENCE_MISMATCH'],
  ['several audiences without azp', { aud: [AUDIENCE, 'other'] }, 'ASSERTION_AUDIENCE_MISMATCH'],
  ['expired', { exp: now - 61, iat: now - 400 }, 'ASSERTION_EXPIRED'],
  ['not yet valid (nbf)', { nbf: now + 120 }, 'ASSERTION_NOT_YET_VALID'],
  ['issued in the future', { iat: now + 120, exp: now + 400 }, 'ASSERTION_NOT_YET_VALID'],
  ['stale auth_time', { auth_time: now - 700, iat: now - 690, exp: now + 60 }, 'ASSERTION_AUTH_TOO_OLD'],
  ['minted from an old session', { auth_time: now - 300 }, 'ASSERTION_LOGIN_NOT_FRESH'],
  ['no auth_time', { auth_time: undefined }, 'ASSERTION_CLAIMS_INVALID'],
  ['acr below the minimum', { acr: 'http://id.elegnamnden.se/loa/1.0/loa2' }, 'ASSERTION_LOA_INSUFFICIENT'],
  ['no acr', { acr: undefined }, 'ASSERTION_LOA_INSUFFICIENT'],
  ['no nonce', { nonce: undefined }, 'ASSERTION_BINDING_MISMATCH'],
  [
    'bound to another digest',
    { nonce: assertionNonce({ ...BINDING, digest: Buffer.alloc(32, 8).toString('base64') }) },
    'ASSERTION_BINDING_MISMATCH',
  ],
  [
    'bound to another request id',
    { nonce: assertionNonce({ ...BINDING, requestId: '1b7d2a4e-9f3c-4d1a-8e2b-5c6d7e8f9a0b' }) },
    'ASSERTION_BINDING_MISMATCH',
  ],
  ['lives too long', { exp: now + 7200 }, 'ASSERTION_CLAIMS_INVALID'],
  [
    'no personal identity number',
    { [SWEDISH_OIDC_CLAIMS.personalIdentityNumber]: undefined },
    'ASSERTION_CLAIMS_INVALID',
  ],
  [
    'malformed personal identity number',
    { [SWEDISH_OIDC_CLAIMS.personalIdentityNumber]: '1978 0202' },
    'ASSERTION_CLAIMS_INVALID',
  ],
  ['a name that is not a string', { [SWEDISH_OIDC_CLAIMS.givenName]: 42 }, 'ASSERTION_CLAIMS_INVALID'],
  ['DN syntax in a name', { [SWEDISH_OIDC_CLAIMS.familyName]: 'Öberg,CN=Evil' }, 'ASSERTION_CLAIMS_INVALID'],
  ['no subject', { sub: undefined }, 'ASSERTION_CLAIMS_INVALID'],
])('%s: %s', async (_name, overrides, code) => {
  const { verifier } = setup();
  expect(await refusal(verifier.verify(await sign(rsa, claims(now, overrides)), NONCE))).toBe(code);
});

test("the CA's rule: an expired token is judged by its age against the CA's bound instead", async () => {
  const { verifier } = setup();
  const atCa = { maxAgeSeconds: 600 };
  // Accepted at the API, expired by the time its request reached the CA: still recent enough.
  const expired = await sign(rsa, claims(now, { iat: now - 400, auth_time: now - 405, exp: now - 100 }));
  expect(await refusal(verifier.verify(expired, NONCE))).toBe('ASSERTION_EXPIRED');
  await verifier.verify(expired, NONCE, atCa);
  // Older than the bound (iat, or auth_time): stale, whatever exp says.
  const old = await sign(rsa, claims(now, { iat: now - 700, auth_time: now - 705, exp: now + 60 }));
  expect(await refusal(verifier.verify(old, NONCE, atCa))).toBe('ASSERTION_STALE');
  // The login-gap rule applies at the CA too.
  const silent = await sign(rsa, claims(now, { auth_time: now - 200 }));
  expect(await refusal(verifier.verify(silent, NONCE, atCa))).toBe('ASSERTION_LOGIN_NOT_FRESH');
});

test('an ID token typed as a request object is refused: neither kind is accepted as the other', async () => {
  const { verifier } = setup();
  const typed = await sign(rsa, claims(now), { typ: 'sign-request+jwt' });
  expect(await refusal(verifier.verify(typed, NONCE))).toBe('ASSERTION_MALFORMED');
});

test('several audiences are accepted when azp names this service; within the clock skew is still valid', async () => {
  const { verifier } = setup();
  await verifier.verify(await sign(rsa, claims(now, { aud: [AUDIENCE, 'x'], azp: AUDIENCE })), NONCE);
  await verifier.verify(await sign(rsa, claims(now, { exp: now - 30, iat: now - 300 })), NONCE);
  await verifier.verify(await sign(rsa, claims(now, { nbf: now + 30 })), NONCE);
});

test('the display name falls back to given name and surname', async () => {
  const { verifier } = setup();
  const verified = await verifier.verify(await sign(rsa, claims(now, { name: undefined })), NONCE);
  expect(verified.signer.commonName).toBe('Åsa Öberg');
  // Made of two claims, it came from no one attribute: no mapping for the common name.
  expect(verified.authContext.attributes.map((a) => a.field)).toEqual([
    'surname',
    'givenName',
    'serialNumber',
  ]);
});

test('not a JWS, oversized, or with a payload that is not a JSON object', async () => {
  const { verifier } = setup();
  for (const token of [
    'not a token',
    'a.b',
    'a.b.c.d',
    `${'a'.repeat(5000)}.${'b'.repeat(5000)}.c`,
    '..',
    'YQ.YQ.YQ',
  ]) {
    expect(await refusal(verifier.verify(token, NONCE))).toBe('ASSERTION_MALFORMED');
  }
  const header = b64url({ alg: 'RS256', kid: rsa.kid });
  expect(
    await refusal(verifier.verify(`${header}.${Buffer.from('[1,2]').toString('base64url')}.AAAA`, NONCE)),
  ).toMatch(/ASSERTION_(MALFORMED|ISSUER_UNTRUSTED)/);
});

test('a token spelled with non-canonical base64url (same bytes, other last character) is malformed', async () => {
  const { verifier } = setup();
  const valid = await sign(rsa, claims(now));
  const [h, p, s] = valid.split('.');
  // 256 signature bytes leave 4 unused bits in the last character: flip one of them.
  const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.indexOf(s.slice(-1));
  const respelled = `${s.slice(0, -1)}${'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'[last ^ 1]}`;
  expect(Buffer.from(respelled, 'base64url')).toEqual(Buffer.from(s, 'base64url'));
  expect(await refusal(verifier.verify(`${h}.${p}.${respelled}`, NONCE))).toBe('ASSERTION_MALFORMED');
});

test('property: any mutation of a valid token is refused with an assertion code, never accepted or crashing', async () => {
  const { verifier } = setup();
  const valid = await sign(rsa, claims(now));
  const [h, p, s] = valid.split('.');
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ';
  const mutation = fc.oneof(
    // Replace characters anywhere.
    fc
      .array(fc.tuple(fc.nat({ max: valid.length - 1 }), fc.constantFrom(...alphabet)), {
        minLength: 1,
        maxLength: 4,
      })
      .map((edits) => {
        const chars = [...valid];
        for (const [i, c] of edits) chars[i] = c;
        return chars.join('');
      }),
    // Truncate or extend.
    fc.nat({ max: valid.length - 1 }).map((n) => valid.slice(0, n)),
    fc.string({ maxLength: 20 }).map((tail) => `${valid}${tail}`),
    // Change a claim and re-encode the payload without re-signing.
    fc
      .tuple(
        fc.constantFrom(
          'iss',
          'aud',
          'exp',
          'nonce',
          'acr',
          'sub',
          SWEDISH_OIDC_CLAIMS.personalIdentityNumber,
          'auth_time',
        ),
        fc.jsonValue({ maxDepth: 1 }),
      )
      .map(([claim, value]) => `${h}.${b64url({ ...claims(now), [claim]: value })}.${s}`),
    // Swap the header for another algorithm or key id, keep the rest.
    fc
      .record({
        alg: fc.constantFrom('none', 'HS256', 'RS256', 'ES256', 'PS256'),
        kid: fc.constantFrom(rsa.kid, ec.kid, 'x'),
      })
      .map((header) => `${b64url(header)}.${p}.${s}`),
  );
  await fc.assert(
    fc.asyncProperty(mutation, async (token) => {
      fc.pre(token !== valid);
      const code = await refusal(verifier.verify(token, NONCE));
      expect(code).toMatch(/^ASSERTION_[A-Z_]+$/);
    }),
    { numRuns: 400 },
  );
});

describe("a request with a sign message: the ID token must carry its issuer's approval of it", () => {
  const expecting = { approval: EXPECTED_APPROVAL };

  test('an approval signed by the issuer for this message, digest, subject and nonce is accepted (RS256 and ES256)', async () => {
    const { verifier } = setup();
    for (const key of [rsa, ec]) {
      const token = await sign(key, signedClaims(now, await userSignature(key, approvalClaims(now))));
      const verified = await verifier.verify(token, SIGNED_NONCE, expecting);
      expect(verified.signer.serialNumber).toBe('197802022389');
      // The CA's rule on time applies with the approval too.
      await verifier.verify(token, SIGNED_NONCE, { ...expecting, maxAgeSeconds: 600 });
    }
    // Signed with another of the issuer's keys than the token: still the issuer's.
    const mixed = await sign(rsa, signedClaims(now, await userSignature(ec, approvalClaims(now))));
    await verifier.verify(mixed, SIGNED_NONCE, expecting);
  });

  test('without an expectation (no sign message) the claim is not required and not read', async () => {
    const { verifier } = setup();
    await verifier.verify(await sign(rsa, claims(now)), NONCE);
    await verifier.verify(await sign(rsa, signedClaims(now, 'not an approval')), SIGNED_NONCE);
  });

  test('no approval: ASSERTION_APPROVAL_MISSING', async () => {
    const { verifier } = setup();
    const token = await sign(rsa, signedClaims(now, undefined));
    expect(await refusal(verifier.verify(token, SIGNED_NONCE, expecting))).toBe('ASSERTION_APPROVAL_MISSING');
  });

  test.each<[string, (key: TestKey, attacker: TestKey) => Promise<unknown>, string]>([
    ['not base64', async () => 'a.b.c!', 'ASSERTION_APPROVAL_INVALID'],
    ['not a string', async () => 42, 'ASSERTION_APPROVAL_INVALID'],
    ['base64 of no JWS', async () => Buffer.from('hello').toString('base64'), 'ASSERTION_APPROVAL_INVALID'],
    [
      'signed by a key the issuer does not publish',
      (_key, attacker) => userSignature(attacker, approvalClaims(now)),
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'not typed as an approval (an ID token in its place)',
      (key) => userSignature(key, approvalClaims(now), { typ: 'JWT' }),
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'an algorithm that is not accepted',
      async (key) => {
        const [h, p] = (await sign(key, approvalClaims(now), { typ: 'sign-approval+jwt' })).split('.');
        const header = Buffer.from(
          JSON.stringify({ ...JSON.parse(Buffer.from(h, 'base64url').toString()), alg: 'HS256' }),
        ).toString('base64url');
        const mac = createHmac('sha256', 'k').update(`${header}.${p}`).digest('base64url');
        return Buffer.from(`${header}.${p}.${mac}`).toString('base64');
      },
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'made by another issuer',
      (key) => userSignature(key, approvalClaims(now, { iss: 'https://other.example' })),
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'for another subject',
      (key) => userSignature(key, approvalClaims(now, { sub: 'someone-else' })),
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'for another authentication request (nonce)',
      (key) => userSignature(key, approvalClaims(now, { nonce: NONCE })),
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'for another service',
      (key) => userSignature(key, approvalClaims(now, { aud: 'other-service' })),
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'made before the login',
      (key) => userSignature(key, approvalClaims(now, { iat: now - 200 })),
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'made after the token',
      (key) => userSignature(key, approvalClaims(now, { iat: now + 120 })),
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'no iat',
      (key) => userSignature(key, approvalClaims(now, { iat: undefined })),
      'ASSERTION_APPROVAL_INVALID',
    ],
    [
      'another sign message displayed',
      (key) => userSignature(key, approvalClaims(now, { sign_message_hash: 'f'.repeat(64) })),
      'ASSERTION_APPROVAL_MISMATCH',
    ],
    [
      'no sign message hash',
      (key) => userSignature(key, approvalClaims(now, { sign_message_hash: undefined })),
      'ASSERTION_APPROVAL_MISMATCH',
    ],
    [
      'other data approved (tbs_data)',
      (key) => userSignature(key, approvalClaims(now, { tbs_data: Buffer.alloc(32, 9).toString('base64') })),
      'ASSERTION_APPROVAL_MISMATCH',
    ],
  ])('an approval %s is refused', async (_name, approval, code) => {
    const { verifier } = setup();
    const attacker = await testKey('RS256', rsa.kid);
    const token = await sign(rsa, signedClaims(now, await approval(rsa, attacker)));
    expect(await refusal(verifier.verify(token, SIGNED_NONCE, expecting))).toBe(code);
  });

  test('the token must still bind the message: an approved token whose nonce lacks it is a binding mismatch', async () => {
    const { verifier } = setup();
    const approval = await userSignature(rsa, approvalClaims(now, { nonce: NONCE }));
    const token = await sign(rsa, claims(now, { 'https://id.oidc.se/claim/userSignature': approval }));
    expect(await refusal(verifier.verify(token, SIGNED_NONCE, expecting))).toBe('ASSERTION_BINDING_MISMATCH');
  });

  test('BINDING and its signed variant differ only by the message line', () => {
    expect(SIGNED_NONCE).not.toBe(NONCE);
    expect(EXPECTED_APPROVAL.tbsData).toBe(BINDING.digest);
  });
});
