/**
 * Contract test: the running local API against its OpenAPI document (lambdas/api/openapi.json), with
 * requests generated from the document's schemas by fast-check (seeded: CONTRACT_SEED reproduces a run).
 *
 * - Schema-valid bodies are accepted: 202 (or 200 for a repeat), and the link from the answer leads to
 *   GET /v1/sign-requests/{id}, followed until the request is terminal. A body with a real identity
 *   assertion (from the local IdP, or a registered client's request object, bound to the generated
 *   request) must be accepted; a schema-valid body with a generated token may only be refused for the
 *   token (an `ASSERTION_*` code), never for its shape or its spelling.
 * - Mutated bodies the schema refuses are refused with a declared 4xx, never accepted; so is a generated
 *   assertion respelled so that a segment is not canonical base64url (ASSERTION_MALFORMED).
 * - Every answer's status is declared for its operation and its body matches the declared schema;
 *   no 5xx. Operations that declare credentials refuse requests without them; a method a path does not
 *   list gets 405 with Allow; a body that is not JSON gets 415.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import openapi from '../../../../lambdas/api/openapi.json';
import {
  assertionNonce,
  bindingOf,
  signMessageHash,
  composeSignMessage,
  requestBindingOf,
  type AssertionBinding,
  type RequestBinding,
  type SignMessage,
} from '@pipeline/core/identity';
import {
  defaultSignatureAlgorithm,
  type AdesProfile,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
  type SignatureFormat,
} from '@pipeline/core/shared';
import { validateDocuments } from '@pipeline/core/signing';
import { obtainIdToken } from '../../../client/src/oidc-login';
import { signRequestObject } from '../../../client/src/signing-client';
import { IDP_CLIENT_KEYS_DIR, localClientKey, localClientKeysEnv } from '../../client-keys';
import {
  call,
  localIssuer,
  sampleRequest,
  signerOf,
  submitAndWait,
  verifySignedResult,
  type HttpResult,
  type SignRequestView,
} from '../../client';
import { LOCAL_DIR } from '../../paths';
import { CLIENT_IDS } from '../../idp/clients';
import { TEST_CITIZENS } from '../../idp/citizens';
import { startLocalPipeline, type LocalPipeline } from '../pipeline';

jest.setTimeout(300_000);

const SEED = Number(process.env.CONTRACT_SEED ?? 20261124);
const TRUSTED = { clientId: 'contract-trusted', apiKey: `trusted-${randomBytes(8).toString('hex')}` };

type Schema = Record<string, unknown>;
type Doc = typeof openapi & Record<string, unknown>;
const doc = openapi as Doc;

const ajv = new Ajv({ allErrors: false, strict: false });
// The document's formats (date-time, ...) are checked, not ignored.
addFormats(ajv);
ajv.addSchema(openapi, 'openapi.json');
const pointer = (path: string[]): string =>
  `openapi.json#/${path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
const validator = (path: string[]) => ajv.compile({ $ref: pointer(path) });
const validBody = validator(['components', 'schemas', 'SignRequestInput']);

let pipeline: LocalPipeline;
let base: string;
const answers: Array<{ where: string; status: number }> = [];

beforeAll(async () => {
  pipeline = await startLocalPipeline({
    resourcePrefix: `contract-${randomBytes(3).toString('hex')}-`,
    log: () => undefined,
    env: {
      PORT: '0',
      // Keys of every type the generator may ask for (a request of a type with no key would wait for a
      // key generated on the fly, which the contract does not need).
      POOL_TARGETS: 'RSA-2048=20,RSA-3072=8,RSA-4096=8,EC-P256=20,EC-P384=20',
      LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
      LOCAL_API_CLIENTS: `${TRUSTED.clientId}:${TRUSTED.apiKey}`,
      ...localClientKeysEnv([TRUSTED.clientId]),
      LOG_LEVEL: 'ERROR',
    },
  });
  await pipeline.runKeygen();
  base = pipeline.url.replace(/\/v1$/, '');
});

afterAll(async () => {
  await pipeline?.stop();
});

// ---- the document -------------------------------------------------------------------------------

function resolve(schema: Schema): Schema {
  let s = schema;
  while (typeof s.$ref === 'string') {
    s = (s.$ref as string)
      .slice(2)
      .split('/')
      .reduce<Record<string, unknown>>((node, key) => node[key] as Record<string, unknown>, doc) as Schema;
  }
  return s;
}

interface Operation {
  readonly path: string;
  readonly method: string;
  readonly op: Record<string, unknown>;
}

const operations: Operation[] = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops as Record<string, Record<string, unknown>>)
    .filter(([method]) => method !== 'parameters')
    .map(([method, op]) => ({ path, method, op })),
);
const operation = (id: string): Operation => operations.find((o) => o.op.operationId === id)!;

/** The answer is declared for the operation, and its body (and required headers) are as declared. */
function expectDeclared(where: Operation, res: HttpResult<unknown>): void {
  answers.push({ where: `${where.method} ${where.path}`, status: res.status });
  const responses = where.op.responses as Record<string, Schema>;
  expect({
    where: `${where.method} ${where.path}`,
    status: res.status,
    declared: res.status in responses,
  }).toEqual({
    where: `${where.method} ${where.path}`,
    status: res.status,
    declared: true,
  });
  expectResponse(['paths', where.path, where.method, 'responses', String(res.status)], res);
}

function expectResponse(path: string[], res: HttpResult<unknown>): void {
  expect(res.status).toBeLessThan(500);
  let response = path.reduce<Record<string, unknown>>(
    (node, key) => node[key] as Record<string, unknown>,
    doc,
  );
  if (typeof response.$ref === 'string') {
    path = response.$ref.slice(2).split('/');
    response = resolve(response);
  }
  for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Schema>)) {
    if (header.required)
      expect({ header: name, present: res.headers.has(name) }).toEqual({ header: name, present: true });
  }
  if (response.content) {
    const validate = validator([...path, 'content', 'application/json', 'schema']);
    if (!validate(res.body)) {
      throw new Error(
        `${res.status} body does not match its schema: ${JSON.stringify(validate.errors)}\n${JSON.stringify(res.body).slice(0, 500)}`,
      );
    }
  }
}

// ---- generators over the schema -----------------------------------------------------------------

/** Values of a schema (the subset the document uses), with branches of anyOf/oneOf chosen and merged. */
function arbitrary(schema: Schema): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if (s.type === 'string') {
    const min = Number(s.minLength ?? 0);
    const max = Number(s.maxLength ?? 64);
    const text =
      typeof s.pattern === 'string'
        ? fc.stringMatching(new RegExp(s.pattern as string, 'u'))
        : fc.string({ minLength: min, maxLength: max });
    // Well-formed Unicode only: JSON between systems is UTF-8 (RFC 8259 section 8.1), which has no lone
    // surrogates; a pattern over code points (the sign message's) cannot exclude them itself.
    return text.filter((v) => [...v].length >= min && [...v].length <= max && !/[\uD800-\uDFFF]/u.test(v));
  }
  if (s.type === 'integer')
    return fc.integer({ min: Number(s.minimum ?? 0), max: Number(s.maximum ?? 1000) });
  // Arrays (documents): a few items, at least the minimum.
  if (s.type === 'array') {
    const minLength = Number(s.minItems ?? 0);
    return fc.array(arbitrary(s.items as Schema), { minLength, maxLength: Math.max(minLength, 3) });
  }
  return objectArbitrary(s);
}

/** An object schema with its allOf/oneOf/anyOf branches: one branch of each, merged into the properties. */
function objectArbitrary(s: Schema): fc.Arbitrary<unknown> {
  const choices: Schema[][] = [];
  if (Array.isArray(s.oneOf)) choices.push(s.oneOf as Schema[]);
  if (Array.isArray(s.anyOf)) choices.push(s.anyOf as Schema[]);
  for (const part of (s.allOf ?? []) as Schema[]) {
    if (Array.isArray(part.anyOf)) choices.push(part.anyOf as Schema[]);
    if (Array.isArray(part.oneOf)) choices.push(part.oneOf as Schema[]);
  }
  const branches =
    choices.length === 0
      ? fc.constant([] as Schema[])
      : fc.tuple(...choices.map((c) => fc.constantFrom(...c)));
  return branches.chain((picked) => {
    const properties = { ...((s.properties ?? {}) as Record<string, Schema>) };
    const required = new Set((s.required ?? []) as string[]);
    const absent = new Set<string>();
    for (const b of picked) {
      for (const r of (b.required ?? []) as string[]) required.add(r);
      for (const r of ((b.not as Schema | undefined)?.required ?? []) as string[]) absent.add(r);
      for (const [name, narrower] of Object.entries((b.properties ?? {}) as Record<string, Schema>)) {
        properties[name] = { ...resolve(properties[name] ?? {}), ...narrower };
      }
    }
    const record: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [name, sub] of Object.entries(properties))
      if (!absent.has(name)) record[name] = arbitrary(sub);
    return fc.record(record, { requiredKeys: [...required].filter((r) => !absent.has(r)) });
  });
}

/** Schema-valid sign request bodies (the filter drops the few branch combinations that contradict). */
const signRequestBodies = objectArbitrary(resolve({ $ref: '#/components/schemas/SignRequestInput' })).filter(
  (b) => validBody(b),
) as fc.Arbitrary<Record<string, unknown>>;
const singleDocumentBodies = signRequestBodies.filter((b) => b.documents === undefined);

/** A body with one field removed, retyped, replaced by a value outside its schema, or an unknown field. */
const mutatedBodies = fc
  .tuple(
    signRequestBodies,
    fc.constantFrom(
      'digest',
      'digestAlgorithm',
      'keyType',
      'signatureAlgorithm',
      'format',
      'profile',
      'requestId',
      'signer',
      'identityAssertion',
      'signMessage',
      'extra',
    ),
    fc.oneof(
      fc.constant(undefined),
      fc.jsonValue({ maxDepth: 2 }),
      fc.string({ maxLength: 120 }),
      fc.constantFrom('', 'SHA-1', 'RSA-1024', 'ECDSA', 'cms', 'CAdES-B-LT', 'not base64!', '=='),
    ),
  )
  .map(([body, field, value]) => {
    const out: Record<string, unknown> = { ...body };
    if (value === undefined) delete out[field];
    else out[field] = value;
    return out;
  });

/**
 * A body whose generated assertion is respelled so that one segment no longer decodes canonically: one
 * character longer (length 1 mod 4, no whole byte) or another last character (unused bits not zero).
 */
const respelledAssertions = fc
  .tuple(
    signRequestBodies.filter((b) => b.identityAssertion !== undefined),
    fc.nat({ max: 2 }),
    fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'),
  )
  .map(([body, i, c]) => {
    const parts = String(body.identityAssertion).split('.');
    parts[i] = parts[i].length % 4 === 0 ? `${parts[i]}${c}` : `${parts[i].slice(0, -1)}${c}`;
    return { ...body, identityAssertion: parts.join('.') };
  })
  .filter((b) => !validBody(b));

// ---- properties ---------------------------------------------------------------------------------

/** A body's sign message with the API's default MIME type, if it has one. */
function signMessageOfBody(body: Record<string, unknown>): SignMessage | undefined {
  const message = body.signMessage as { text: string; mimeType?: SignMessage['mimeType'] } | undefined;
  return message && { text: message.text, mimeType: message.mimeType ?? 'text/plain' };
}

/**
 * What a body binds, with the defaults the API applies (the assertion's nonce covers them): v2, or for a
 * body with documents v3 over their manifest (and the composed sign message).
 */
function bindingOfBody(body: Record<string, unknown>): RequestBinding {
  const keyType = (body.keyType ?? 'RSA-2048') as KeyType;
  const format = (body.format ?? 'raw') as SignatureFormat;
  const message = signMessageOfBody(body);
  if (body.documents !== undefined) {
    const documents = validateDocuments(body.documents);
    return requestBindingOf({
      ...(message ? { signMessageHash: signMessageHash(composeSignMessage(message, documents)) } : {}),
      id: String(body.requestId).toLowerCase(),
      digest: '',
      digestAlgorithm: 'SHA-256',
      keyType,
      signatureAlgorithm: (body.signatureAlgorithm ??
        defaultSignatureAlgorithm(keyType)) as SignatureAlgorithm,
      documents,
    });
  }
  return bindingOf({
    ...(message ? { signMessageHash: signMessageHash(message) } : {}),
    id: String(body.requestId).toLowerCase(),
    digest: String(body.digest),
    digestAlgorithm: body.digestAlgorithm as DigestAlgorithm,
    keyType,
    signatureAlgorithm: (body.signatureAlgorithm ?? defaultSignatureAlgorithm(keyType)) as SignatureAlgorithm,
    format,
    profile: format === 'cms' ? ((body.profile ?? 'CAdES-B-B') as AdesProfile) : undefined,
  });
}

const create = operation('createSignRequest');
const read = operation('getSignRequest');

async function post(body: unknown, apiKey = pipeline.apiKey): Promise<HttpResult<Record<string, unknown>>> {
  return call(`${pipeline.url}/sign-requests`, { apiKey, body });
}

/** Follows the 202/200 answer's declared link to the request, until it is terminal. */
async function followLink(status: number, body: Record<string, unknown>, apiKey: string): Promise<void> {
  const link = (
    (create.op.responses as Record<string, Schema>)[String(status)].links as Record<string, Schema>
  ).GetSignRequest;
  expect(link.operationId).toBe('getSignRequest');
  const id = body[String((link.parameters as Record<string, string>).id).replace('$response.body#/', '')];
  let view: HttpResult<Record<string, unknown>>;
  do {
    view = await call(`${pipeline.url}/sign-requests/${String(id)}?wait=10`, { apiKey });
    expectDeclared(read, view);
    expect(view.status).toBe(200);
  } while (view.body.status === 'received' || view.body.status === 'signing');
  expect(view.body.status).toBe('signed');
}

test('schema-valid bodies with a registered client’s request object are accepted, and their links lead to the result', async () => {
  await fc.assert(
    // Bodies of one document: a request object for documents is the client module's to make.
    fc.asyncProperty(singleDocumentBodies, fc.nat(), async (schemaValid, n) => {
      // A request id of its own: the other property draws the same bodies from the same seed.
      const generated = { ...schemaValid, requestId: randomUUID() };
      // The client module's binding names the sign message itself (it hashes it for the nonce).
      const { signMessageHash: _hash, ...bound } = bindingOfBody(generated) as AssertionBinding;
      const message = signMessageOfBody(generated);
      const identityAssertion = await signRequestObject({
        key: localClientKey(TRUSTED.clientId),
        clientId: TRUSTED.clientId,
        binding: { ...bound, ...(message ? { signMessage: message } : {}) },
        signer: signerOf(TEST_CITIZENS[n % 3]),
      });
      const body = { ...generated, identityAssertion };
      const res = await post(body, TRUSTED.apiKey);
      expectDeclared(create, res);
      expect([202, 200]).toContain(res.status);
      await followLink(res.status, res.body, TRUSTED.apiKey);
    }),
    { seed: SEED, numRuns: 25, endOnFailure: true },
  );
});

test('schema-valid bodies with an identity assertion bound to them are accepted; with a generated token only the token is refused', async () => {
  await fc.assert(
    fc.asyncProperty(signRequestBodies, fc.nat(), async (body, n) => {
      // As generated: a token of the right shape that no trusted IdP signed.
      const forged = await post(body);
      expectDeclared(create, forged);
      expect(forged.status).toBeGreaterThanOrEqual(400);
      expect(String((forged.body.error as Record<string, unknown>).code)).toMatch(/^ASSERTION_/);
      // Never for its spelling: the schema admits only the spellings the verifier decodes.
      expect(String((forged.body.error as Record<string, unknown>).message)).not.toMatch(
        /compact JWS|canonical base64url/,
      );
      // The same body with a real login for this request id and digest (and, with a sign message, the
      // provider's approval of it: the signature extension).
      const citizen = TEST_CITIZENS[n % 3];
      const message = signMessageOfBody(body);
      // Documents with a sign message: the local IdP's approval of a composed message for a manifestHash
      // is the client side's (its IdP page); without one, a real login for documents is made here.
      if (body.documents !== undefined && message) return;
      const { idToken } = await obtainIdToken({
        issuer: localIssuer(),
        clientId: CLIENT_IDS.signingService,
        personalIdentityNumber: citizen.personalIdentityNumber,
        nonce: assertionNonce(bindingOfBody(body)),
        ...(message
          ? {
              signature: {
                key: localClientKey(CLIENT_IDS.signingService, IDP_CLIENT_KEYS_DIR),
                tbsData: String(body.digest),
                signMessage: message,
              },
            }
          : {}),
      });
      const real = { ...body, identityAssertion: idToken };
      const res = await post(real);
      expectDeclared(create, res);
      expect([202, 200]).toContain(res.status);
      await followLink(res.status, res.body, pipeline.apiKey);
    }),
    { seed: SEED, numRuns: 12, endOnFailure: true },
  );
});

test('mutated bodies: refused with a declared 4xx when the schema refuses them, never a 5xx', async () => {
  await fc.assert(
    fc.asyncProperty(mutatedBodies, async (body) => {
      const res = await post(body, TRUSTED.apiKey);
      expectDeclared(create, res);
      if (!validBody(body)) {
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
      }
    }),
    { seed: SEED, numRuns: 100 },
  );
  // Generating a schema-valid body to mutate takes 1-3 s of CPU (string patterns, contradicting branches
  // filtered out): 100 of them beside the other suites of a loaded CI run need more than the default.
}, 900_000);

test('respelled assertions (a segment of length 1 mod 4, a non-canonical last character): the schema refuses them, and so does the API, as ASSERTION_MALFORMED', async () => {
  await fc.assert(
    fc.asyncProperty(respelledAssertions, async (body) => {
      const res = await post(body);
      expectDeclared(create, res);
      expect([res.status, (res.body.error as Record<string, unknown>).code]).toEqual([
        400,
        'ASSERTION_MALFORMED',
      ]);
    }),
    { seed: SEED, numRuns: 25 },
  );
});

test('credentials: declared operations refuse requests without them; health answers both shapes', async () => {
  const id = randomUUID();
  for (const o of operations) {
    const security = (o.op.security ?? doc.security) as Schema[];
    const optional = security.some((s) => Object.keys(s).length === 0);
    const path = o.path.replace('{id}', id);
    const res = await call(`${base}${path}`, {
      method: o.method.toUpperCase(),
      ...(o.method === 'post' ? { body: o.path.endsWith('revocation') ? { reason: 'superseded' } : {} } : {}),
    });
    expectDeclared(o, res);
    if (optional) expect(res.status).toBe(200);
    else expect(res.status).toBe(401);
  }
  const health = operation('getHealth');
  const anonymous = await call(`${base}/v1/health`);
  const identified = await call(`${base}/v1/health`, { apiKey: pipeline.apiKey });
  expectDeclared(health, anonymous);
  expectDeclared(health, identified);
  expect(Object.keys(anonymous.body as object).sort()).toEqual(['status']);
  expect(Object.keys(identified.body as object).sort()).toEqual(['pool', 'queue', 'status']);
  const wrongKey = await call(`${base}/v1/health`, { apiKey: 'not-a-key' });
  expectDeclared(health, wrongKey);
  expect(wrongKey.status).toBe(403);
});

test('POST with wait: one call answers 200 with the signed request as GET answers it; wait=0 still 202', async () => {
  const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
  const request = await sampleRequest('EC-P256', 0);
  const waited = await call<SignRequestView>(`${pipeline.url}/sign-requests?wait=20`, {
    apiKey: pipeline.apiKey,
    body: request.body,
  });
  expectDeclared(create, waited);
  expect(waited.status).toBe(200);
  expect(waited.body).toMatchObject({ id: request.body.requestId, status: 'signed' });
  expect(verifySignedResult(request, waited.body, rootPem)).toEqual({ ok: true });
  expect(waited.headers.get('location')).toBe(`/v1/sign-requests/${request.body.requestId}`);
  const read = await call(`${pipeline.url}/sign-requests/${request.body.requestId}`, {
    apiKey: pipeline.apiKey,
  });
  expect(waited.body).toEqual(read.body);

  const later = await sampleRequest('EC-P256', 1);
  const immediate = await call(`${pipeline.url}/sign-requests?wait=0`, {
    apiKey: pipeline.apiKey,
    body: later.body,
  });
  expectDeclared(create, immediate);
  expect(immediate.status).toBe(202);
  expect(immediate.body).toEqual({ id: later.body.requestId, status: 'received' });
  await followLink(immediate.status, immediate.body, pipeline.apiKey);
});

test('submitAndWait: one HTTP call per request when it ends within the wait (it was a POST and a GET)', async () => {
  const requests = await Promise.all([0, 1, 2, 3, 4].map((i) => sampleRequest('EC-P256', i)));
  const fetched: string[] = [];
  const realFetch = globalThis.fetch;
  const spy = jest.spyOn(globalThis, 'fetch').mockImplementation((input, init) => {
    fetched.push(`${init?.method ?? 'GET'} ${String(input)}`);
    return realFetch(input, init);
  });
  try {
    for (const request of requests) {
      const before = fetched.length;
      const { status } = await submitAndWait(pipeline.url, pipeline.apiKey, request.body);
      expect(status).toBe('signed');
      expect(fetched.slice(before)).toEqual([`POST ${pipeline.url}/sign-requests?wait=20`]);
    }
  } finally {
    spy.mockRestore();
  }
});

test('a method a path does not list: 405 with Allow; a body that is not JSON: 415', async () => {
  const id = randomUUID();
  for (const [path, ops] of Object.entries(doc.paths)) {
    const listed = Object.keys(ops as object)
      .filter((m) => m !== 'parameters')
      .map((m) => m.toUpperCase());
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => !listed.includes(m))) {
      const res = await call(`${base}${path.replace('{id}', id)}`, { method, apiKey: pipeline.apiKey });
      expect({ path, method, status: res.status }).toEqual({ path, method, status: 405 });
      expectResponse(['components', 'responses', 'MethodNotAllowed'], res);
      expect(res.headers.get('allow')?.split(', ').sort()).toEqual(listed.sort());
    }
  }
  const res = await call(`${pipeline.url}/sign-requests`, {
    apiKey: pipeline.apiKey,
    rawBody: 'digest=abc',
    headers: { 'content-type': 'text/plain' },
  });
  expectDeclared(create, res);
  expect(res.status).toBe(415);
});

afterAll(() => {
  // What the run covered, by operation and status (printed with CONTRACT_VERBOSE).
  if (process.env.CONTRACT_VERBOSE) {
    const seen = new Map<string, number>();
    for (const a of answers)
      seen.set(`${a.where} ${a.status}`, (seen.get(`${a.where} ${a.status}`) ?? 0) + 1);
    console.log(`seed ${SEED}`, Object.fromEntries(seen));
  }
});
