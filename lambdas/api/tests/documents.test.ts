/**
 * Several documents under one login at the API, over in-memory ports and the real ID token verifier: the
 * documents are resolved (defaults), bound by the v3 nonce over their manifest (a document added,
 * removed, reordered or changed is ASSERTION_BINDING_MISMATCH), the approval must name the manifestHash
 * and the composed message, a resend is the same request, and the body is either the single document's
 * fields or documents. The same over HTTP against the whole pipeline: scripts/local/runner/tests/documents.e2e.test.ts.
 */
import Ajv from 'ajv';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import {
  SWEDISH_CLAIM_MAPPING,
  USER_SIGNATURE_CLAIM,
  assertionNonce,
  composeSignMessage,
  manifestHash,
  requestBindingOf,
  signMessageHash,
  type ManifestDocument,
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
import openapi from '../openapi.json';
import { handleApiEvent, type ApiDeps } from '../src';

let key: TestKey;
beforeAll(async () => {
  key = await testKey('RS256', 'k1');
});

function deps() {
  const records = new Map<string, SignRequestRecord>();
  const verifier = new JwsAssertionVerifier({
    issuers: new Map([
      [ISSUER, new RefreshingJwks(async () => jwksOf(key), { refreshIntervalMs: 30_000, maxAgeMs: 600_000 })],
    ]),
    algorithms: ['RS256'],
    policy: {
      audience: AUDIENCE,
      clockSkewSeconds: 60,
      maxAuthAgeSeconds: 600,
      acceptedAcr: [LOA3],
      maxLifetimeSeconds: 3600,
      maxAuthGapSeconds: 30,
    },
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
      maxBodyBytes: 65536,
      retentionSeconds: 3600,
      rejectWhenPoolEmpty: false,
      retryAfterSeconds: 30,
    },
    identity: { verifier, assertions: memoryAssertionStore() },
  };
  return { deps: d, records };
}

function post(body: unknown): APIGatewayProxyEvent {
  return {
    httpMethod: 'POST',
    resource: '/sign-requests',
    path: '/sign-requests',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    isBase64Encoded: false,
    pathParameters: null,
    queryStringParameters: null,
    requestContext: { stage: 'v1', identity: { apiKeyId: 'client-a' } },
  } as unknown as APIGatewayProxyEvent;
}

function getOf(id: string): APIGatewayProxyEvent {
  return {
    ...post(''),
    httpMethod: 'GET',
    resource: '/sign-requests/{id}',
    body: null,
    pathParameters: { id },
  } as APIGatewayProxyEvent;
}

const answer = (res: { statusCode: number; body: string }) => ({
  status: res.statusCode,
  code: (JSON.parse(res.body) as { error?: { code: string } }).error?.code,
});

const digest = (n: number): string => Buffer.alloc(32, n).toString('base64');

/** Documents as sent: a PAdES at B-LT, a named CAdES (defaults), an unnamed raw (all defaults). */
const SENT = [
  {
    name: 'application.pdf',
    digest: digest(1),
    digestAlgorithm: 'SHA-256',
    format: 'cms',
    profile: 'PAdES-B-B',
    level: 'B-LT',
  },
  { name: 'notes.txt', digest: digest(2), digestAlgorithm: 'SHA-256', format: 'cms' },
  { digest: digest(3), digestAlgorithm: 'SHA-256' },
];
/** The same as the API resolves them (what the manifest names). */
const RESOLVED: ManifestDocument[] = [
  {
    name: 'application.pdf',
    digest: digest(1),
    digestAlgorithm: 'SHA-256',
    format: 'cms',
    profile: 'PAdES-B-B',
  },
  { name: 'notes.txt', digest: digest(2), digestAlgorithm: 'SHA-256', format: 'cms', profile: 'CAdES-B-B' },
  { digest: digest(3), digestAlgorithm: 'SHA-256', format: 'raw' },
];
const MESSAGE: SignMessage = { text: 'I apply for a building permit.', mimeType: 'text/plain' };

/**
 * A body of `sent` documents with an ID token whose nonce binds `bound` (what the citizen's login was
 * made for) and, with a message, the approval of the composed message for the manifestHash.
 */
async function body(
  options: {
    sent?: unknown[];
    bound?: ManifestDocument[];
    message?: SignMessage;
    tbsData?: string;
  } = {},
) {
  const requestId = crypto.randomUUID();
  const bound = options.bound ?? RESOLVED;
  const composed = options.message && composeSignMessage(options.message, bound);
  const nonce = assertionNonce(
    requestBindingOf({
      id: requestId,
      keyType: 'EC-P256',
      signatureAlgorithm: 'ECDSA',
      digest: '',
      digestAlgorithm: 'SHA-256',
      documents: bound,
      ...(composed ? { signMessageHash: signMessageHash(composed) } : {}),
    }),
  );
  const now = Math.floor(Date.now() / 1000);
  const approval =
    composed &&
    (await userSignature(key, {
      iss: ISSUER,
      sub: 'c0ffee-subject-1',
      aud: AUDIENCE,
      iat: now - 6,
      nonce,
      tbs_data: options.tbsData ?? manifestHash(bound),
      sign_message_hash: signMessageHash(composed),
    }));
  const identityAssertion = await sign(
    key,
    claims(now, { nonce, ...(approval ? { [USER_SIGNATURE_CLAIM]: approval } : {}) }),
  );
  return {
    requestId,
    keyType: 'EC-P256',
    signatureAlgorithm: 'ECDSA',
    documents: options.sent ?? SENT,
    ...(options.message ? { signMessage: options.message } : {}),
    identityAssertion,
  };
}

test('a request of 50 B-LT documents is recorded with its admission weight, 10; a few documents weigh 1', async () => {
  const { deps: d, records } = deps();
  const bound: ManifestDocument[] = Array.from({ length: 50 }, (_, i) => ({
    name: `document-${i + 1}.pdf`,
    digest: digest(i + 1),
    digestAlgorithm: 'SHA-256',
    format: 'cms',
    profile: 'PAdES-B-B',
  }));
  const heavy = await body({ sent: bound.map((doc) => ({ ...doc, level: 'B-LT' })), bound });
  expect((await handleApiEvent(post(heavy), d)).statusCode).toBe(202);
  expect(records.get(heavy.requestId)!.admissionWeight).toBe(10);
  const light = await body();
  expect((await handleApiEvent(post(light), d)).statusCode).toBe(202);
  expect(records.get(light.requestId)!.admissionWeight).toBeUndefined();
});

test('accepted: the record holds the resolved documents, the manifest as its digest, the composed message hash and the original message; GET lists the documents in order', async () => {
  const { deps: d, records } = deps();
  const b = await body({ message: MESSAGE });
  const first = await handleApiEvent(post(b), d);
  expect(first.statusCode).toBe(202);
  const record = records.get(b.requestId)!;
  expect(record.documents).toEqual([
    { ...RESOLVED[0], level: 'B-LT', minimumLevel: 'B-LT' },
    { ...RESOLVED[1], level: 'B-LT', minimumLevel: 'B-LT' },
    RESOLVED[2],
  ]);
  expect(record.format).toBeUndefined();
  expect(record.digest).toBe(Buffer.from(manifestHash(RESOLVED), 'base64url').toString('base64'));
  expect(record.signMessageHash).toBe(signMessageHash(composeSignMessage(MESSAGE, RESOLVED)));
  expect(record.signMessage).toEqual(MESSAGE);
  const view = JSON.parse((await handleApiEvent(getOf(b.requestId), d)).body);
  expect(
    view.documents.map((x: { index: number; name?: string; format: string }) => [x.index, x.name, x.format]),
  ).toEqual([
    [0, 'application.pdf', 'cms'],
    [1, 'notes.txt', 'cms'],
    [2, undefined, 'raw'],
  ]);
  expect(view.format).toBeUndefined();
  expect(view.signature).toBeUndefined();
  // A resend of the same body is the same request; the same id with one document changed is not.
  const resend = await handleApiEvent(post(b), d);
  expect(resend.statusCode).toBe(200);
  expect(JSON.parse(resend.body)).toEqual(JSON.parse(first.body));
  const changed = { ...b, documents: [SENT[0], { ...SENT[1], level: 'B-T' }, SENT[2]] };
  expect(answer(await handleApiEvent(post(changed), d))).toEqual({
    status: 409,
    code: 'REQUEST_ID_CONFLICT',
  });
});

test.each<[string, unknown[]]>([
  ['added', [...SENT, { digest: digest(4), digestAlgorithm: 'SHA-256' }]],
  ['removed', SENT.slice(0, 2)],
  ['reordered', [SENT[1], SENT[0], SENT[2]]],
  ['changed (digest)', [SENT[0], { ...SENT[1], digest: digest(9) }, SENT[2]]],
  ['changed (profile)', [{ ...SENT[0], profile: 'CAdES-B-B' }, SENT[1], SENT[2]]],
  ['changed (name)', [{ ...SENT[0], name: 'other.pdf' }, SENT[1], SENT[2]]],
  ['changed (format)', [SENT[0], SENT[1], { ...SENT[2], format: 'cms' }]],
])('a document %s after the login: ASSERTION_BINDING_MISMATCH, nothing stored', async (_, sent) => {
  const { deps: d, records } = deps();
  const b = await body({ sent });
  expect(answer(await handleApiEvent(post(b), d))).toEqual({
    status: 400,
    code: 'ASSERTION_BINDING_MISMATCH',
  });
  expect(records.size).toBe(0);
});

test('levels are not bound (as in v2): another level under the same login is accepted', async () => {
  const { deps: d } = deps();
  const b = await body({ sent: [{ ...SENT[0], level: 'B-T', minimumLevel: 'B-B' }, SENT[1], SENT[2]] });
  expect((await handleApiEvent(post(b), d)).statusCode).toBe(202);
});

test("an approval of the first document's digest (a v2 tbs_data), not the manifestHash: ASSERTION_APPROVAL_MISMATCH", async () => {
  const { deps: d } = deps();
  const b = await body({ message: MESSAGE, tbsData: digest(1) });
  expect(answer(await handleApiEvent(post(b), d))).toEqual({
    status: 400,
    code: 'ASSERTION_APPROVAL_MISMATCH',
  });
});

test("a login approved for the e-service's text alone (not the composed message): refused", async () => {
  const { deps: d } = deps();
  const b = await body({ message: MESSAGE });
  // The login bound the composed message; the body claims another text, whose composition differs.
  const res = await handleApiEvent(post({ ...b, signMessage: { ...MESSAGE, text: 'Another text.' } }), d);
  expect(answer(res)).toEqual({ status: 400, code: 'ASSERTION_BINDING_MISMATCH' });
});

test.each<[string, Record<string, unknown>, string]>([
  [
    'documents with digest',
    { digest: digest(1), digestAlgorithm: 'SHA-256' },
    "never sent with the single document's fields",
  ],
  ['documents with format', { format: 'raw' }, "never sent with the single document's fields"],
  ['documents with level', { level: 'B-T' }, "never sent with the single document's fields"],
  ['no document', { documents: [] }, 'documents must be an array of 1 to 50'],
  [
    '51 documents',
    { documents: Array.from({ length: 51 }, () => SENT[2]) },
    'documents must be an array of 1 to 50',
  ],
  ['a name with a line feed', { documents: [{ ...SENT[2], name: 'a\nb' }] }, 'documents[0].name'],
  [
    'a raw document with a profile',
    { documents: [{ ...SENT[2], profile: 'CAdES-B-B' }] },
    'profile applies to format cms only',
  ],
  [
    'a short digest',
    { documents: [SENT[0], { ...SENT[2], digest: Buffer.alloc(20).toString('base64') }] },
    'documents[1].digest',
  ],
])('%s: VALIDATION_FAILED naming the rule', async (_, change, message) => {
  const { deps: d, records } = deps();
  const b = { ...(await body()), ...change };
  const res = await handleApiEvent(post(b), d);
  expect(answer(res)).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
  expect(JSON.parse(res.body).error.message).toContain(message);
  expect(records.size).toBe(0);
});

test('a single document request without digest still names it', async () => {
  const { deps: d } = deps();
  const { documents: _, ...rest } = await body();
  const res = await handleApiEvent(post({ ...rest, digestAlgorithm: 'SHA-256' }), d);
  expect(answer(res)).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
  expect(JSON.parse(res.body).error.message).toBe('digest is required');
});

test('fifty documents with names of 120 characters are accepted', async () => {
  const { deps: d, records } = deps();
  const sent = Array.from({ length: 50 }, (_, i) => ({
    name: `${String(i).padStart(3, '0')}${'ä'.repeat(117)}`,
    digest: digest(i),
    digestAlgorithm: 'SHA-256',
    format: 'cms',
  }));
  const bound = sent.map((s) => ({
    ...s,
    format: 'cms' as const,
    digestAlgorithm: 'SHA-256' as const,
    profile: 'CAdES-B-B' as const,
  }));
  const b = await body({ sent, bound, message: { text: 'x'.repeat(1000), mimeType: 'text/plain' } });
  expect((await handleApiEvent(post(b), d)).statusCode).toBe(202);
  expect(records.get(b.requestId)!.documents).toHaveLength(50);
});

describe('openapi.json and the code agree', () => {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addSchema(openapi, 'openapi.json');
  const schema = (name: string) => ajv.getSchema(`openapi.json#/components/schemas/${name}`)!;

  test('the input schema: documents alone valid, with a single document field not, 1 to 50', async () => {
    const input = schema('SignRequestInput');
    const b = await body();
    expect(input(b)).toBe(true);
    expect(input({ ...b, digest: digest(1) })).toBe(false);
    expect(input({ ...b, format: 'raw' })).toBe(false);
    expect(input({ ...b, documents: [] })).toBe(false);
    expect(input({ ...b, documents: Array.from({ length: 51 }, () => SENT[2]) })).toBe(false);
    expect(input({ ...b, documents: [{ ...SENT[2], profile: 'CAdES-B-B' }] })).toBe(false);
    expect(input({ ...b, documents: [{ ...SENT[2], name: 'a\tb' }] })).toBe(false);
  });

  test("a signed request's view (documents with their results) and a failed one's follow the SignRequest schema", async () => {
    const { deps: d, records } = deps();
    const b = await body();
    await handleApiEvent(post(b), d);
    const record = records.get(b.requestId)!;
    const view = schema('SignRequest');
    records.set(b.requestId, {
      ...record,
      status: 'signed',
      certificate: 'PEM',
      certificateSerial: '0a1b',
      chain: ['PEM', 'PEM'],
      documentResults: [
        {
          index: 0,
          cms: 'MA==',
          reachedLevel: 'B-LT',
          validationData: { certificates: [], ocspResponses: ['MA=='], crls: [] },
        },
        { index: 1, cms: 'MA==', reachedLevel: 'B-LT' },
        { index: 2, signature: 'MA==' },
      ],
    });
    const signed = JSON.parse((await handleApiEvent(getOf(b.requestId), d)).body);
    expect([view(signed), view.errors]).toEqual([true, null]);
    expect(signed.documents.map((x: { cms?: string; signature?: string }) => [x.cms, x.signature])).toEqual([
      ['MA==', undefined],
      ['MA==', undefined],
      [undefined, 'MA=='],
    ]);
    // Failed: the documents as asked, no signature of any.
    records.set(b.requestId, {
      ...record,
      status: 'failed',
      error: { code: 'TSA_UNAVAILABLE', message: 'x' },
    });
    const failed = JSON.parse((await handleApiEvent(getOf(b.requestId), d)).body);
    expect(view(failed)).toBe(true);
    expect(failed.documents.every((x: { cms?: string; signature?: string }) => !x.cms && !x.signature)).toBe(
      true,
    );
  });
});
