/**
 * Identity over HTTP, against the local OpenID Provider (real logins with PKCE) and the whole pipeline:
 * every certificate names the person of a verified assertion; a client cannot get a certificate for
 * anyone else; every bad assertion is refused with its own code, without a certificate, without a pool
 * key, and without the token or personal data in any log line. Forged tokens are signed with the IdP's
 * own key file (what an attacker does not have) to reach the checks after the signature.
 */
import { createHmac, createPublicKey, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { SignJWT, decodeJwt, importJWK, type CryptoKey, type JWK } from 'jose';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@pipeline/adapters/aws';
import { loadAwsConfig } from '@pipeline/config';
import { assertionNonce, signMessageHash } from '@pipeline/core/identity';
import type { DigestAlgorithm } from '@pipeline/core/shared';
import { TABLES } from '@pipeline/resources';
import { runOpenssl } from '../../verify/openssl';
import { PARAM_SIGN_REQUEST, SCOPE_SIGN, obtainIdToken } from '../../../client/src/oidc-login';
import { call, localIssuer, sampleRequest, type SampleRequest, type SignRequestView } from '../../client';
import { LOA2_CITIZEN_INDEX, TEST_CITIZENS } from '../../idp/citizens';
import { CLIENT_IDS } from '../../idp/clients';
import { IDP_CLIENT_KEYS_DIR, localClientKey } from '../../client-keys';
import { forgeIdToken, idpSigningKey } from '../../idp/forge';
import { SWEDISH_CLAIMS } from '../../idp/profile';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

jest.setTimeout(120_000);

const OTHER_CLIENT = { clientId: 'other-eservice', apiKey: `other-${randomBytes(8).toString('hex')}` };
let pipeline: LocalPipeline;
const lines: string[] = [];
const restore: Array<() => void> = [];

beforeAll(async () => {
  // Every line any part of the pipeline writes, to check what the logs carry.
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream);
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      lines.push(String(chunk));
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
    restore.push(() => (stream.write = write));
  }
  pipeline = await startLocalPipeline({
    resourcePrefix: `identity-${Date.now().toString(36)}-`,
    log: (line) => lines.push(line),
    env: {
      PORT: '0',
      LOG_LEVEL: 'INFO',
      POOL_TARGETS: 'EC-P256=10',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      LOCAL_API_CLIENTS: `${OTHER_CLIENT.clientId}:${OTHER_CLIENT.apiKey}`,
    },
  });
  await pipeline.runKeygen();
});

afterAll(async () => {
  await pipeline?.stop();
  for (const undo of restore) undo();
});

const post = (body: unknown, apiKey = pipeline.apiKey) =>
  call<{ id?: string; error?: { code: string; message: string } }>(`${pipeline.url}/sign-requests`, {
    apiKey,
    body,
  });

/** Pooled keys stored right now, summed over the bundle items (a claim deletes its bundle in the same step). */
async function poolKeys(): Promise<number> {
  const doc = documentClient(loadAwsConfig(process.env));
  try {
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await doc.send(
        new ScanCommand({
          TableName: pipeline.env[TABLES.keyPool.envVar],
          FilterExpression: 'attribute_exists(keyCount)',
          ProjectionExpression: 'keyCount',
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of out.Items ?? []) count += Number(item.keyCount);
      startKey = out.LastEvaluatedKey;
    } while (startKey);
    return count;
  } finally {
    doc.destroy();
  }
}

/** The pooled keys once the signers' background prefetch of a next key has settled. */
async function settledPoolDepth(): Promise<number> {
  let last = await poolKeys();
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await poolKeys();
    if (now === last) return now;
    last = now;
  }
}

async function result(id: string): Promise<SignRequestView> {
  return (
    await call<SignRequestView>(`${pipeline.url}/sign-requests/${id}?wait=20`, { apiKey: pipeline.apiKey })
  ).body;
}

/** A fresh request (EC-P256, raw) and the nonce a login must carry for it. */
function binding(digestAlgorithm: DigestAlgorithm = 'SHA-256') {
  const body = {
    requestId: randomUUID(),
    digest: randomBytes(32).toString('base64'),
    digestAlgorithm,
    keyType: 'EC-P256' as const,
    signatureAlgorithm: 'ECDSA' as const,
    format: 'raw' as const,
  };
  return { ...body, body, nonce: assertionNonce(body) };
}

/** The IdP's own RSA signing key. */
const idpKey = idpSigningKey;

/** A token as the IdP would issue it for Åsa, with claims changed; signed by `key` (the IdP's by default). */
function forged(
  nonce: string,
  overrides: Record<string, unknown> = {},
  signWith?: { key: CryptoKey; kid: string },
): Promise<string> {
  return forgeIdToken({ issuer: localIssuer(), nonce, overrides, signWith });
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

test('every certificate names the citizen who logged in, and only that citizen', async () => {
  for (const citizen of TEST_CITIZENS.filter((_, i) => i !== LOA2_CITIZEN_INDEX).slice(0, 3)) {
    const request = await sampleRequest('EC-P256', 0, { citizen });
    const accepted = await post(request.body);
    expect(accepted.status).toBe(202);
    const view = await result(accepted.body.id!);
    expect(view.status).toBe('signed');
    const printed = runOpenssl(
      ['x509', '-in', 'c.pem', '-noout', '-subject', '-nameopt', 'utf8,sep_comma_plus'],
      {
        'c.pem': view.certificate!,
      },
    ).stdout;
    expect(printed).toContain(`serialNumber=${citizen.personalIdentityNumber}`);
    expect(printed).toContain(`GN=${citizen.givenName}`);
    expect(printed).toContain(`SN=${citizen.familyName}`);
    expect(printed).toContain(`CN=${citizen.name}`);
  }
});

test('a client cannot obtain a certificate for a person it did not present an assertion for', async () => {
  const eve = {
    commonName: 'Eve Evil',
    givenName: 'Eve',
    surname: 'Evil',
    serialNumber: '199001019999',
    country: 'SE',
  };
  const depth = await settledPoolDepth();
  // Naming the person outright.
  const { body, requestId } = binding();
  const named = await post({ ...body, signer: eve });
  expect([named.status, named.body.error?.code]).toEqual([400, 'SIGNER_NOT_ALLOWED']);
  // Åsa's login, with Eve as the signer beside it.
  const asa = await sampleRequest('EC-P256', 0, { citizen: TEST_CITIZENS[0] });
  const both = await post({ ...asa.body, signer: eve });
  expect([both.status, both.body.error?.code]).toEqual([400, 'SIGNER_NOT_ALLOWED']);
  // Åsa's login for one document, presented for another.
  const other = await post({ ...asa.body, digest: randomBytes(32).toString('base64') });
  expect([other.status, other.body.error?.code]).toEqual([400, 'ASSERTION_BINDING_MISMATCH']);
  for (const id of [requestId, asa.body.requestId]) {
    expect((await call(`${pipeline.url}/sign-requests/${id}`, { apiKey: pipeline.apiKey })).status).toBe(404);
  }
  expect(await settledPoolDepth()).toBe(depth);
});

describe('bad assertions: their own code, no request, no key, no certificate, nothing personal in the logs', () => {
  let depthBefore: number;
  beforeAll(async () => {
    depthBefore = await settledPoolDepth();
  });

  const cases: Array<[string, (b: ReturnType<typeof binding>) => Promise<string | unknown>, number, string]> =
    [
      [
        'expired',
        (b) => forged(b.nonce, { iat: now() - 900, exp: now() - 600, auth_time: now() - 905 }),
        400,
        'ASSERTION_EXPIRED',
      ],
      ['not yet valid', (b) => forged(b.nonce, { nbf: now() + 600 }), 400, 'ASSERTION_NOT_YET_VALID'],
      [
        'issued to another client (wrong aud)',
        async (b) =>
          (
            await obtainIdToken({
              issuer: localIssuer(),
              clientId: CLIENT_IDS.otherService,
              personalIdentityNumber: TEST_CITIZENS[0].personalIdentityNumber,
              nonce: b.nonce,
            })
          ).idToken,
        400,
        'ASSERTION_AUDIENCE_MISMATCH',
      ],
      [
        'from an untrusted issuer',
        async (b) => forged(b.nonce, { iss: 'https://idp.evil.example' }, await ownKey('evil')),
        400,
        'ASSERTION_ISSUER_UNTRUSTED',
      ],
      [
        'alg none',
        async (b) => `${b64({ alg: 'none' })}.${b64(decodeJwt(await forged(b.nonce)))}.`,
        400,
        'ASSERTION_ALGORITHM_NOT_ALLOWED',
      ],
      [
        'HS256 keyed with the RSA public key',
        (b) => hmacWithPublicKey(b.nonce),
        400,
        'ASSERTION_ALGORITHM_NOT_ALLOWED',
      ],
      [
        'an unknown kid',
        async (b) => forged(b.nonce, {}, await ownKey('not-published')),
        400,
        'ASSERTION_UNKNOWN_KEY',
      ],
      [
        'a key not in the JWKS, under a published kid',
        async (b) => forged(b.nonce, {}, await ownKey((await idpKey()).kid)),
        400,
        'ASSERTION_SIGNATURE_INVALID',
      ],
      [
        'bound to another digest',
        (b) => forged(assertionNonce({ ...b.body, digest: randomBytes(32).toString('base64') })),
        400,
        'ASSERTION_BINDING_MISMATCH',
      ],
      [
        'bound to another request id',
        (b) => forged(assertionNonce({ ...b.body, requestId: randomUUID() })),
        400,
        'ASSERTION_BINDING_MISMATCH',
      ],
      [
        'bound to another key type',
        (b) => forged(assertionNonce({ ...b.body, keyType: 'EC-P384' })),
        400,
        'ASSERTION_BINDING_MISMATCH',
      ],
      [
        'minted from an earlier session (auth_time long before iat)',
        (b) => forged(b.nonce, { auth_time: now() - 300 }),
        400,
        'ASSERTION_LOGIN_NOT_FRESH',
      ],
      [
        'without the personal identity number',
        (b) => forged(b.nonce, { [SWEDISH_CLAIMS.personalIdentityNumber]: undefined }),
        400,
        'ASSERTION_CLAIMS_INVALID',
      ],
      [
        'with a malformed name',
        (b) => forged(b.nonce, { [SWEDISH_CLAIMS.familyName]: 'Öberg,CN=Root' }),
        400,
        'ASSERTION_CLAIMS_INVALID',
      ],
      [
        'at a level of assurance below the minimum (a real loa2 login)',
        async (b) =>
          (
            await obtainIdToken({
              issuer: localIssuer(),
              clientId: CLIENT_IDS.signingService,
              personalIdentityNumber: TEST_CITIZENS[LOA2_CITIZEN_INDEX].personalIdentityNumber,
              nonce: b.nonce,
            })
          ).idToken,
        400,
        'ASSERTION_LOA_INSUFFICIENT',
      ],
      [
        'with a stale auth_time',
        (b) => forged(b.nonce, { auth_time: now() - 3600, iat: now() - 3590, exp: now() + 5 }),
        400,
        'ASSERTION_AUTH_TOO_OLD',
      ],
      ['oversized', async () => `${'a'.repeat(6000)}.${'b'.repeat(3000)}.c`, 400, 'ASSERTION_MALFORMED'],
      ['not a JWS', async () => 'this is not a token', 400, 'ASSERTION_MALFORMED'],
    ];

  test.each(cases)('%s', async (_name, make, status, code) => {
    const b = binding();
    const token = await make(b);
    const res = await post({ ...b.body, identityAssertion: token });
    expect([res.status, res.body.error?.code]).toEqual([status, code]);
    expect(res.body.error?.message.length).toBeGreaterThan(0);
    expect(
      (await call(`${pipeline.url}/sign-requests/${b.requestId}`, { apiKey: pipeline.apiKey })).status,
    ).toBe(404);
    const logged = lines.join('\n');
    if (typeof token === 'string' && token.length > 20) expect(logged).not.toContain(token);
    expect(logged).not.toContain(TEST_CITIZENS[0].personalIdentityNumber);
  });

  test('none of them took a pool key', async () => {
    expect(await settledPoolDepth()).toBe(depthBefore);
  });

  test('a replayed assertion: another e-service presenting it is refused; the first request stands', async () => {
    const request = await sampleRequest('EC-P256', 0);
    expect((await post(request.body)).status).toBe(202);
    const replay = await post(request.body, OTHER_CLIENT.apiKey);
    expect([replay.status, replay.body.error?.code]).toEqual([409, 'ASSERTION_REPLAYED']);
    expect((await result(request.body.requestId)).status).toBe('signed');
  });

  test('refusals are logged by code, without the token', () => {
    const logged = lines.join('\n');
    expect(logged).toMatch(/identity assertion refused.*ASSERTION_EXPIRED/);
    expect(logged).not.toMatch(/eyJ[A-Za-z0-9_-]{20,}\.eyJ/);
  });
});

describe('a sign message: shown and approved at the identity provider, attested in the token, kept as a hash', () => {
  // A marker that must never reach a log line (the message is not logged, only its hash is kept).
  const MESSAGE = {
    text: 'Jag godkänner avtal Hemlig-7f3a-4711 om fjärrvärme.',
    mimeType: 'text/plain' as const,
  };

  /** A login for `shown` at the IdP (the signature extension) whose nonce binds `bound` (default: the same). */
  async function approvedLogin(b: ReturnType<typeof binding>, shown: typeof MESSAGE, bound = shown) {
    return (
      await obtainIdToken({
        issuer: localIssuer(),
        clientId: CLIENT_IDS.signingService,
        personalIdentityNumber: TEST_CITIZENS[0].personalIdentityNumber,
        nonce: assertionNonce({ ...b.body, signMessageHash: signMessageHash(bound) }),
        signature: {
          key: localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR),
          tbsData: b.body.digest,
          signMessage: shown,
        },
      })
    ).idToken;
  }

  test('approved: signed, the request shows the hash, no log line shows the text', async () => {
    const b = binding();
    const res = await post({
      ...b.body,
      signMessage: MESSAGE,
      identityAssertion: await approvedLogin(b, MESSAGE),
    });
    expect(res.status).toBe(202);
    const view = (await result(b.requestId)) as SignRequestView & { signMessageHash?: string };
    expect(view.status).toBe('signed');
    expect(view.signMessageHash).toBe(signMessageHash(MESSAGE));
    expect(lines.join('\n')).not.toContain('Hemlig-7f3a-4711');
  });

  test('in the citizen’s language (message#en): the hash binds exactly the text shown, the API accepts it', async () => {
    const b = binding();
    const english = {
      text: 'I approve district heating contract Hemlig-7f3a-4711.',
      mimeType: 'text/plain' as const,
    };
    const { idToken } = await obtainIdToken({
      issuer: localIssuer(),
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: TEST_CITIZENS[0].personalIdentityNumber,
      nonce: assertionNonce({ ...b.body, signMessageHash: signMessageHash(english) }),
      signature: {
        key: localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR),
        tbsData: b.body.digest,
        signMessage: english,
        language: 'en',
      },
      acceptLanguage: 'sv-SE,sv;q=0.9',
    });
    const res = await post({ ...b.body, signMessage: english, identityAssertion: idToken });
    expect(res.status).toBe(202);
    const view = (await result(b.requestId)) as SignRequestView & { signMessageHash?: string };
    expect(view.status).toBe('signed');
    expect(view.signMessageHash).toBe(signMessageHash(english));
    expect(lines.join('\n')).not.toContain('Hemlig-7f3a-4711');
  });

  test('a message#sv/message#en pair: signed only when the provider showed the text the request binds', async () => {
    const swedish = MESSAGE;
    const english = { text: 'I approve district heating contract 4711.', mimeType: 'text/plain' as const };
    /** A login whose signRequest offers both languages; the nonce binds the Swedish text. */
    const pairLogin = async (b: ReturnType<typeof binding>, acceptLanguage: string) => {
      const now = Math.floor(Date.now() / 1000);
      const signRequest = await new SignJWT({
        tbs_data: b.body.digest,
        sign_message: {
          'message#sv': Buffer.from(swedish.text).toString('base64'),
          'message#en': Buffer.from(english.text).toString('base64'),
          mime_type: 'text/plain',
        },
      })
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer(CLIENT_IDS.signingService)
        .setAudience(localIssuer())
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR).privateKey);
      return (
        await obtainIdToken({
          issuer: localIssuer(),
          clientId: CLIENT_IDS.signingService,
          personalIdentityNumber: TEST_CITIZENS[0].personalIdentityNumber,
          nonce: assertionNonce({ ...b.body, signMessageHash: signMessageHash(swedish) }),
          scope: `openid profile https://id.oidc.se/scope/naturalPersonNumber ${SCOPE_SIGN}`,
          extraParameters: { [PARAM_SIGN_REQUEST]: signRequest },
          acceptLanguage,
        })
      ).idToken;
    };
    const shownSwedish = binding();
    const accepted = await post({
      ...shownSwedish.body,
      signMessage: swedish,
      identityAssertion: await pairLogin(shownSwedish, 'sv'),
    });
    expect(accepted.status).toBe(202);
    expect((await result(shownSwedish.requestId)).status).toBe('signed');
    // The browser asked for English: the provider showed (and attests) the English text, not the bound one.
    const shownEnglish = binding();
    const refused = await post({
      ...shownEnglish.body,
      signMessage: swedish,
      identityAssertion: await pairLogin(shownEnglish, 'en'),
    });
    expect([refused.status, refused.body.error?.code]).toEqual([400, 'ASSERTION_APPROVAL_MISMATCH']);
  });

  test('refused with its own code, nothing stored, no key: a login without the approval, or an approval of another text', async () => {
    const depth = await settledPoolDepth();
    // A plain login (no signature extension) whose nonce binds the message: the provider never showed it.
    const plain = binding();
    const unshown = await obtainIdToken({
      issuer: localIssuer(),
      clientId: CLIENT_IDS.signingService,
      personalIdentityNumber: TEST_CITIZENS[0].personalIdentityNumber,
      nonce: assertionNonce({ ...plain.body, signMessageHash: signMessageHash(MESSAGE) }),
    });
    const missing = await post({ ...plain.body, signMessage: MESSAGE, identityAssertion: unshown.idToken });
    expect([missing.status, missing.body.error?.code]).toEqual([400, 'ASSERTION_APPROVAL_MISSING']);
    // The e-service binds one text and has the provider show another.
    const swapped = binding();
    const shownOther = await approvedLogin(
      swapped,
      { ...MESSAGE, text: 'Jag godkänner ingenting.' },
      MESSAGE,
    );
    const mismatch = await post({ ...swapped.body, signMessage: MESSAGE, identityAssertion: shownOther });
    expect([mismatch.status, mismatch.body.error?.code]).toEqual([400, 'ASSERTION_APPROVAL_MISMATCH']);
    // A text the API cannot accept: its own code, before any assertion check.
    const bidi = await post({
      ...binding().body,
      signMessage: { text: 'betala \u202e001' },
      identityAssertion: unshown.idToken,
    });
    expect([bidi.status, bidi.body.error?.code]).toEqual([400, 'SIGN_MESSAGE_INVALID']);
    for (const id of [plain.requestId, swapped.requestId]) {
      expect((await call(`${pipeline.url}/sign-requests/${id}`, { apiKey: pipeline.apiKey })).status).toBe(
        404,
      );
    }
    expect(await settledPoolDepth()).toBe(depth);
  });
});

describe('a sign message with invisible or direction characters: refused at the API even with the provider’s approval of it', () => {
  /** A token of the local provider's key approving exactly `text` for a fresh request (a lax provider's). */
  async function approved(text: string) {
    const b = binding();
    const message = { text, mimeType: 'text/plain' as const };
    const hash = signMessageHash(message);
    const identityAssertion = await forgeIdToken({
      issuer: localIssuer(),
      nonce: assertionNonce({ ...b.body, signMessageHash: hash }),
      approval: { tbsData: b.body.digest, signMessageHash: hash },
    });
    return { b, body: { ...b.body, signMessage: message, identityAssertion } };
  }

  test.each<[string, string]>([
    ['a left-to-right mark', 'Jag godkänner \u200eavtal 12'],
    ['a right-to-left mark', 'Jag godkänner avtal \u200f12'],
    ['an Arabic letter mark', 'Jag godkänner \u061cavtal 12'],
    ['a zero-width space', 'Jag god\u200bkänner avtal 12'],
    ['a zero-width non-joiner', 'Jag god\u200ckänner avtal 12'],
    ['a zero-width joiner', 'Jag god\u200dkänner avtal 12'],
    ['a word joiner', 'Jag\u2060godkänner avtal 12'],
    ['an invisible plus', 'Jag godkänner avtal 1\u20642'],
    ['a byte order mark', '\ufeffJag godkänner avtal 12'],
    ['a soft hyphen', 'Jag god\u00adkänner avtal 12'],
    ['tag characters', 'Jag godkänner avtal 12\u{e0031}\u{e0033}'],
    ['a Hangul filler', 'Jag godkänner avtal 12 \u3164'],
    ['only invisible characters', '\u3164\u200b\u2060\ufeff'],
  ])('%s: 400 SIGN_MESSAGE_INVALID, nothing stored', async (_name, text) => {
    const { b, body } = await approved(text);
    const res = await post(body);
    expect([res.status, res.body.error?.code]).toEqual([400, 'SIGN_MESSAGE_INVALID']);
    expect(
      (await call(`${pipeline.url}/sign-requests/${b.requestId}`, { apiKey: pipeline.apiKey })).status,
    ).toBe(404);
  });

  test('the same approval of a message by the rules is accepted: the refusals are the message’s', async () => {
    const { b, body } = await approved('Jag godkänner avtal 12');
    const res = await post(body);
    expect(res.status).toBe(202);
    expect((await result(b.requestId)).status).toBe('signed');
  });
});

test('property: a real login tampered with anywhere is refused with an assertion code and nothing is signed', async () => {
  const depth = await settledPoolDepth();
  let base: SampleRequest | undefined;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.nat(), fc.constantFrom(...'AZaz09-_.')), { minLength: 1, maxLength: 3 }),
      async (edits) => {
        base ??= await sampleRequest('EC-P256', 1);
        const token = base.body.identityAssertion;
        const chars = [...token];
        for (const [i, c] of edits) chars[i % chars.length] = c;
        const tampered = chars.join('');
        fc.pre(tampered !== token);
        const res = await post({ ...base.body, identityAssertion: tampered });
        expect(res.status).toBe(400);
        expect(res.body.error?.code).toMatch(/^ASSERTION_/);
      },
    ),
    { numRuns: 40 },
  );
  expect(await settledPoolDepth()).toBe(depth);
});

function now(): number {
  return Math.floor(Date.now() / 1000);
}

/** A key pair of the test's own, published nowhere. */
async function ownKey(kid: string): Promise<{ key: CryptoKey; kid: string }> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    key: (await importJWK(privateKey.export({ format: 'jwk' }) as JWK, 'RS256')) as CryptoKey,
    kid,
  };
}

/** The classic confusion: HS256 with the issuer's RSA public key (PEM, which anyone can fetch) as secret. */
async function hmacWithPublicKey(nonce: string): Promise<string> {
  const discovery = (await (await fetch(`${localIssuer()}/.well-known/openid-configuration`)).json()) as {
    jwks_uri: string;
  };
  const published = (await (await fetch(discovery.jwks_uri)).json()) as { keys: JWK[] };
  const rsa = published.keys.find((k) => k.kty === 'RSA')!;
  const pem = createPublicKey({ key: rsa as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
  const header = b64({ alg: 'HS256', kid: rsa.kid });
  const payload = b64(decodeJwt(await forged(nonce)));
  const mac = createHmac('sha256', pem).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${mac}`;
}
