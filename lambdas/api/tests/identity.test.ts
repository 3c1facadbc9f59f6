/**
 * The API's identity rules over in-memory ports and the real ID token verifier (a throwaway issuer's
 * keys): the certificate subject comes from a verified assertion bound to the request, never from the
 * caller's word, each assertion is used once, and every refusal has its own code and stores nothing. The
 * same rules over HTTP against the local OpenID Provider and the whole pipeline are in
 * scripts/local/runner/tests/identity.e2e.test.ts.
 */
import fc from 'fast-check';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import {
  SWEDISH_CLAIM_MAPPING,
  USER_SIGNATURE_CLAIM,
  assertionNonce,
  bindingOf,
  signMessageHash,
  type SignMessage,
} from '@pipeline/core/identity';
import type { SignRequestRecord } from '@pipeline/core/signing';
import { JwsAssertionVerifier, RefreshingJwks } from '@pipeline/adapters/oidc';
import {
  AUDIENCE,
  ISSUER,
  LOA3,
  claims,
  jwksOf,
  memoryAssertionStore,
  sign,
  testKey,
  userSignature,
  type TestKey,
} from '../../test-support/test-issuer';
import { handleApiEvent, type ApiDeps } from '../src';

let key: TestKey;
/** The request-object key of the client `trusted`, registered with the service. */
let clientKey: TestKey;
beforeAll(async () => {
  key = await testKey('RS256', 'k1');
  clientKey = await testKey('ES256', 'trusted-1');
});

const POLICY = {
  audience: AUDIENCE,
  clockSkewSeconds: 60,
  maxAuthAgeSeconds: 600,
  acceptedAcr: [LOA3],
  maxLifetimeSeconds: 3600,
  maxAuthGapSeconds: 30,
};

function deps() {
  const records = new Map<string, SignRequestRecord>();
  const refusals: Array<{ code: string; context: unknown }> = [];
  const assertions = memoryAssertionStore();
  const keys = (k: () => TestKey) =>
    new RefreshingJwks(async () => jwksOf(k()), { refreshIntervalMs: 30_000, maxAgeMs: 600_000 });
  const verifier = new JwsAssertionVerifier({
    issuers: new Map([[ISSUER, keys(() => key)]]),
    clients: new Map([['trusted', keys(() => clientKey)]]),
    algorithms: ['RS256', 'ES256'],
    policy: POLICY,
    mapping: SWEDISH_CLAIM_MAPPING,
    maxLength: 8192,
  });
  const d: ApiDeps = {
    requests: {
      create: async (r) => (records.has(r.id) ? false : (records.set(r.id, r), true)),
      get: async (id) => records.get(id),
      discard: async (id) => void records.delete(id),
    },
    queue: { enqueue: async () => undefined, depth: async () => ({ visible: 0, inFlight: 0 }) },
    pool: { available: async () => ({}) },
    settings: {
      maxBodyBytes: 16384,
      retentionSeconds: 3600,
      rejectWhenPoolEmpty: false,
      retryAfterSeconds: 30,
    },
    identity: { verifier, assertions },
    onAssertionRefused: (code, context) => refusals.push({ code, context }),
  };
  return { deps: d, records, refusals, assertions };
}

function post(body: unknown, client = 'client-a'): APIGatewayProxyEvent {
  return {
    httpMethod: 'POST',
    resource: '/sign-requests',
    path: '/sign-requests',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    isBase64Encoded: false,
    pathParameters: null,
    queryStringParameters: null,
    requestContext: { stage: 'v1', identity: { apiKeyId: client } },
  } as unknown as APIGatewayProxyEvent;
}

/** A fresh request (id, digest, EC-P256 raw) and the nonce that binds an assertion to it. */
function freshRequest() {
  const body = {
    requestId: crypto.randomUUID(),
    digest: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
    digestAlgorithm: 'SHA-256' as const,
    keyType: 'EC-P256' as const,
    signatureAlgorithm: 'ECDSA' as const,
    format: 'raw' as const,
  };
  return { body, nonce: assertionNonce(bindingOf({ ...body, id: body.requestId })) };
}

/** A request body bound to its own fresh id and digest, with an assertion whose claims are adjusted. */
async function signedBody(overrides: Record<string, unknown> = {}) {
  const { body, nonce } = freshRequest();
  const now = Math.floor(Date.now() / 1000);
  const identityAssertion = await sign(key, claims(now, { nonce, ...overrides }));
  return { ...body, identityAssertion };
}

const EVE = {
  commonName: 'Eve Evil',
  givenName: 'Eve',
  surname: 'Evil',
  serialNumber: '197001019999',
  country: 'SE',
};

/** A request object of `client` (signed with the registered client's key unless told) naming Eve. */
async function requestObjectBody(options: { client?: string; typ?: string; signWith?: TestKey } = {}) {
  const { body, nonce } = freshRequest();
  const now = Math.floor(Date.now() / 1000);
  const identityAssertion = await sign(
    options.signWith ?? clientKey,
    { iss: options.client ?? 'trusted', aud: AUDIENCE, iat: now, exp: now + 300, nonce, signer: EVE },
    { typ: options.typ ?? 'sign-request+jwt' },
  );
  return { ...body, identityAssertion };
}

const answer = (res: { statusCode: number; body: string }) => ({
  status: res.statusCode,
  code: (JSON.parse(res.body) as { error?: { code: string } }).error?.code,
});

test("the record's signer comes from the verified claims; issuer, subject and the token's hash are kept, and the token only while the request is open", async () => {
  const { deps: d, records } = deps();
  const body = await signedBody();
  const res = await handleApiEvent(post(body), d);
  expect(res.statusCode).toBe(202);
  const record = records.get(body.requestId)!;
  expect(record.signer).toEqual({
    commonName: 'Åsa Öberg',
    givenName: 'Åsa',
    surname: 'Öberg',
    serialNumber: '197802022389',
    country: 'SE',
  });
  expect(record.identity).toMatchObject({
    source: 'assertion',
    issuer: ISSUER,
    subject: 'c0ffee-subject-1',
    acr: LOA3,
  });
  // For the CA, which verifies it again; every terminal transition removes it (request-repository).
  expect(record.identityAssertion).toBe(body.identityAssertion);
});

test('a signer named in the body is refused, beside an assertion or alone', async () => {
  const { deps: d, records } = deps();
  const plain = { ...freshRequest().body, signer: EVE };
  expect(answer(await handleApiEvent(post(plain, 'trusted'), d))).toEqual({
    status: 400,
    code: 'SIGNER_NOT_ALLOWED',
  });
  // An assertion for Åsa with a signer for Eve: refused outright, never merged.
  const mixed = { ...(await signedBody()), signer: EVE };
  expect(answer(await handleApiEvent(post(mixed), d))).toEqual({ status: 400, code: 'SIGNER_NOT_ALLOWED' });
  expect(records.size).toBe(0);
});

test("a registered client's request object names the signer it vouches for, from that client only", async () => {
  const { deps: d, records } = deps();
  const vouched = await requestObjectBody();
  expect((await handleApiEvent(post(vouched, 'trusted'), d)).statusCode).toBe(202);
  expect(records.get(vouched.requestId)).toMatchObject({
    signer: EVE,
    identity: { source: 'trusted-client', client: 'trusted' },
  });
  // The same kind of object sent by another client, or signed by a client with no registered key, or
  // not typed as a request object, or signed with another key: refused, nothing stored.
  expect(answer(await handleApiEvent(post(await requestObjectBody(), 'client-a'), d))).toEqual({
    status: 403,
    code: 'CLIENT_NOT_TRUSTED',
  });
  expect(
    answer(await handleApiEvent(post(await requestObjectBody({ client: 'client-a' }), 'client-a'), d)),
  ).toEqual({
    status: 400,
    code: 'ASSERTION_ISSUER_UNTRUSTED',
  });
  expect(answer(await handleApiEvent(post(await requestObjectBody({ typ: 'JWT' }), 'trusted'), d))).toEqual({
    status: 400,
    code: 'ASSERTION_MALFORMED',
  });
  const stranger = await testKey('ES256', 'trusted-1');
  expect(
    answer(await handleApiEvent(post(await requestObjectBody({ signWith: stranger }), 'trusted'), d)),
  ).toEqual({ status: 400, code: 'ASSERTION_SIGNATURE_INVALID' });
  expect(records.size).toBe(1);
});

test('a token minted from an existing session (auth_time long before iat) is not a login for this signature', async () => {
  const { deps: d, records } = deps();
  const now = Math.floor(Date.now() / 1000);
  const silent = await signedBody({ iat: now, auth_time: now - 120 });
  expect(answer(await handleApiEvent(post(silent), d))).toEqual({
    status: 400,
    code: 'ASSERTION_LOGIN_NOT_FRESH',
  });
  expect(records.size).toBe(0);
});

test('without an assertion, or without the request id it is bound to: their own codes', async () => {
  const { deps: d } = deps();
  const body = await signedBody();
  const { identityAssertion: _token, ...noAssertion } = body;
  expect(answer(await handleApiEvent(post(noAssertion), d))).toEqual({
    status: 400,
    code: 'IDENTITY_ASSERTION_REQUIRED',
  });
  const { requestId: _id, ...noId } = body;
  expect(answer(await handleApiEvent(post(noId), d))).toEqual({ status: 400, code: 'REQUEST_ID_REQUIRED' });
});

test('an assertion is used once: another client or another request replaying it is refused; a resend of the same request is not', async () => {
  const { deps: d, records } = deps();
  const body = await signedBody();
  expect((await handleApiEvent(post(body), d)).statusCode).toBe(202);
  expect((await handleApiEvent(post(body), d)).statusCode).toBe(200);
  expect(answer(await handleApiEvent(post(body, 'client-b'), d))).toEqual({
    status: 409,
    code: 'ASSERTION_REPLAYED',
  });
  expect(records.size).toBe(1);
});

test('an assertion bound to another digest, request id, key type, algorithm or format is refused', async () => {
  const { deps: d, records } = deps();
  const body = await signedBody();
  for (const other of [
    { digest: Buffer.alloc(32, 9).toString('base64') },
    { requestId: crypto.randomUUID() },
    { keyType: 'EC-P384' },
    { keyType: 'RSA-2048', signatureAlgorithm: 'RSASSA-PKCS1-v1_5' },
    { format: 'cms' },
  ]) {
    expect(answer(await handleApiEvent(post({ ...body, ...other }), d))).toEqual({
      status: 400,
      code: 'ASSERTION_BINDING_MISMATCH',
    });
  }
  expect(records.size).toBe(0);
});

test('refusals are reported by code and ids only: never the token or the personal number', async () => {
  const { deps: d, refusals, records, assertions } = deps();
  const body = await signedBody({ acr: 'http://id.elegnamnden.se/loa/1.0/loa2' });
  expect(answer(await handleApiEvent(post(body), d))).toEqual({
    status: 400,
    code: 'ASSERTION_LOA_INSUFFICIENT',
  });
  expect(refusals).toEqual([
    { code: 'ASSERTION_LOA_INSUFFICIENT', context: { clientId: 'client-a', requestId: body.requestId } },
  ]);
  const res = await handleApiEvent(post(body), d);
  expect(res.body).not.toContain('197802022389');
  expect(records.size).toBe(0);
  expect(assertions.used.size).toBe(0);
});

test('an oversized or non-JWS assertion is ASSERTION_MALFORMED', async () => {
  const { deps: d } = deps();
  const body = await signedBody();
  for (const identityAssertion of ['x'.repeat(9000), 'not a jws', 'a.b.c.d']) {
    expect(answer(await handleApiEvent(post({ ...body, identityAssertion }), d))).toEqual({
      status: 400,
      code: 'ASSERTION_MALFORMED',
    });
  }
});

test('an identity provider whose keys cannot be read is 503 with Retry-After, and nothing is stored', async () => {
  const { deps: d, records } = deps();
  const down = new JwsAssertionVerifier({
    issuers: new Map([
      [
        ISSUER,
        new RefreshingJwks(() => Promise.reject(new Error('ECONNREFUSED')), {
          refreshIntervalMs: 1,
          maxAgeMs: 1,
        }),
      ],
    ]),
    algorithms: ['RS256'],
    policy: POLICY,
    mapping: SWEDISH_CLAIM_MAPPING,
    maxLength: 8192,
  });
  const res = await handleApiEvent(post(await signedBody()), {
    ...d,
    identity: { ...d.identity, verifier: down },
  });
  expect(answer(res)).toEqual({ status: 503, code: 'IDENTITY_PROVIDER_UNAVAILABLE' });
  expect(res.headers?.['Retry-After']).toBe('5');
  expect(records.size).toBe(0);
});

test('property: a request whose assertion was tampered with is refused with an assertion code and stores nothing', async () => {
  const { deps: d, records } = deps();
  const body = await signedBody();
  const token = body.identityAssertion;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.nat({ max: token.length - 1 }), fc.constantFrom(...'AZaz09-_.')), {
        minLength: 1,
        maxLength: 3,
      }),
      async (edits) => {
        const chars = [...token];
        for (const [i, c] of edits) chars[i] = c;
        const tampered = chars.join('');
        fc.pre(tampered !== token);
        const res = answer(await handleApiEvent(post({ ...body, identityAssertion: tampered }), d));
        expect(res.status).toBe(400);
        expect(res.code).toMatch(/^ASSERTION_/);
      },
    ),
    { numRuns: 300 },
  );
  expect(records.size).toBe(0);
});

describe('a sign message', () => {
  const MESSAGE: SignMessage = {
    text: '# Deklaration 2026\n\nJag intygar att **uppgifterna** stämmer.\tSkatteverket',
    mimeType: 'text/markdown',
  };

  /**
   * A request with `message`, its nonce binding the message's hash, and an ID token carrying the
   * issuer's approval; `approval` adjusts the approval's claims, `token` the token's.
   */
  async function approvedBody(
    options: {
      message?: SignMessage;
      approval?: Record<string, unknown> | null;
      token?: Record<string, unknown>;
      bindMessage?: boolean;
    } = {},
  ) {
    const message = options.message ?? MESSAGE;
    const { body } = freshRequest();
    const hash = signMessageHash(message);
    const nonce = assertionNonce(
      bindingOf({
        ...body,
        id: body.requestId,
        ...(options.bindMessage === false ? {} : { signMessageHash: hash }),
      }),
    );
    const now = Math.floor(Date.now() / 1000);
    const approval =
      options.approval === null
        ? undefined
        : await userSignature(key, {
            iss: ISSUER,
            sub: 'c0ffee-subject-1',
            aud: AUDIENCE,
            iat: now - 6,
            nonce,
            tbs_data: body.digest,
            sign_message_hash: hash,
            ...options.approval,
          });
    const identityAssertion = await sign(
      key,
      claims(now, { nonce, [USER_SIGNATURE_CLAIM]: approval, ...options.token }),
    );
    return { ...body, signMessage: message, identityAssertion };
  }

  test('with its approval: accepted; the record keeps the hash (and the text for the CA while open), GET shows the hash only, the nonce binds it', async () => {
    const { deps: d, records } = deps();
    const body = await approvedBody();
    const res = await handleApiEvent(post(body), d);
    expect(res.statusCode).toBe(202);
    const record = records.get(body.requestId)!;
    expect(record.signMessageHash).toBe(signMessageHash(MESSAGE));
    // The text is on the open record for the CA (every terminal transition removes it).
    expect(record.signMessage).toEqual(MESSAGE);
    const view = await handleApiEvent(
      {
        ...post(''),
        httpMethod: 'GET',
        resource: '/sign-requests/{id}',
        body: null,
        pathParameters: { id: body.requestId },
      } as APIGatewayProxyEvent,
      d,
    );
    expect(JSON.parse(view.body).signMessageHash).toBe(signMessageHash(MESSAGE));
    expect(view.body).not.toContain('Deklaration');
    // The stored binding is the one the CA recomputes: with the message's hash.
    expect(assertionNonce(bindingOf(record))).toBe(
      assertionNonce(bindingOf({ ...body, id: body.requestId, signMessageHash: signMessageHash(MESSAGE) })),
    );
    // A resend with the same message is the same request; with another message it is not.
    expect((await handleApiEvent(post(body), d)).statusCode).toBe(200);
    expect(
      answer(await handleApiEvent(post({ ...body, signMessage: { ...MESSAGE, text: 'x' } }), d)),
    ).toEqual({
      status: 400,
      code: 'ASSERTION_BINDING_MISMATCH',
    });
  });

  test('plain text by default: {text} alone is text/plain', async () => {
    const { deps: d, records } = deps();
    const plain = { text: 'Jag godkänner avtalet.', mimeType: 'text/plain' as const };
    const body = await approvedBody({ message: plain });
    const res = await handleApiEvent(post({ ...body, signMessage: { text: plain.text } }), d);
    expect(res.statusCode).toBe(202);
    expect(records.get(body.requestId)!.signMessageHash).toBe(signMessageHash(plain));
  });

  test.each<[string, Record<string, unknown> | null, Record<string, unknown>, boolean, string]>([
    ['no approval in the token', null, {}, true, 'ASSERTION_APPROVAL_MISSING'],
    [
      'an approval of another message',
      { sign_message_hash: 'a'.repeat(64) },
      {},
      true,
      'ASSERTION_APPROVAL_MISMATCH',
    ],
    [
      'an approval of another digest',
      { tbs_data: Buffer.alloc(32, 3).toString('base64') },
      {},
      true,
      'ASSERTION_APPROVAL_MISMATCH',
    ],
    ['an approval for someone else', { sub: 'other' }, {}, true, 'ASSERTION_APPROVAL_INVALID'],
    ['a nonce that does not bind the message', {}, {}, false, 'ASSERTION_BINDING_MISMATCH'],
  ])('%s: refused, nothing stored', async (_name, approval, token, bindMessage, code) => {
    const { deps: d, records, assertions } = deps();
    const body = await approvedBody({ approval, token, bindMessage });
    expect(answer(await handleApiEvent(post(body), d))).toEqual({ status: 400, code });
    expect(records.size).toBe(0);
    expect(assertions.used.size).toBe(0);
  });

  test('a message dropped from the body: the nonce still binds it, so the request is refused', async () => {
    const { deps: d, records } = deps();
    const { signMessage: _dropped, ...body } = await approvedBody();
    expect(answer(await handleApiEvent(post(body), d))).toEqual({
      status: 400,
      code: 'ASSERTION_BINDING_MISMATCH',
    });
    expect(records.size).toBe(0);
  });

  test.each<[string, unknown]>([
    ['blank', { text: ' \n\t ' }],
    ['empty', { text: '' }],
    ['too long', { text: 'å'.repeat(1001) }],
    ['a carriage return', { text: 'a\r\nb' }],
    ['a control character', { text: 'a\u0007b' }],
    ['a bidirectional override', { text: 'pay \u202Eeulav' }],
    ['a lone surrogate', { text: 'a\ud800b' }],
    ['an unknown MIME type', { text: 'a', mimeType: 'text/html' }],
    ['an unknown field', { text: 'a', lang: 'sv' }],
    ['not an object', 'Jag godkänner'],
    ['no text', { mimeType: 'text/plain' }],
  ])(
    'a message with %s is SIGN_MESSAGE_INVALID, and the message names no text',
    async (_name, signMessage) => {
      const { deps: d, records } = deps();
      const body = await approvedBody();
      const res = await handleApiEvent(post({ ...body, signMessage }), d);
      expect(answer(res)).toEqual({ status: 400, code: 'SIGN_MESSAGE_INVALID' });
      expect(res.body).not.toContain('eulav');
      expect(records.size).toBe(0);
    },
  );

  test('at most 1000 characters, counted as characters (not UTF-16 units) and accepted at the bound', async () => {
    const { deps: d } = deps();
    const message = { text: '😀'.repeat(1000), mimeType: 'text/plain' as const };
    const res = await handleApiEvent(post(await approvedBody({ message })), d);
    expect(res.statusCode).toBe(202);
  });
});
