/**
 * Unit tests of the API function's logic over in-memory ports (routing, validation, idempotency,
 * throttling by pool policy, dependency failures). The HTTP path end to end is tested through the local
 * runner in scripts/local/runner/tests.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { SignRequestRecord } from '@pipeline/core/signing';
import { RequestEndingSignals, SignRequestAdmission, handleApiEvent, type ApiDeps } from '../src';
import { memoryDeps } from './memory-deps';

function event(
  method: string,
  resource: string,
  init: Partial<APIGatewayProxyEvent> = {},
): APIGatewayProxyEvent {
  return {
    httpMethod: method,
    resource,
    path: resource,
    headers: { 'content-type': 'application/json' },
    body: null,
    isBase64Encoded: false,
    pathParameters: null,
    queryStringParameters: null,
    requestContext: { stage: 'v1', identity: { apiKeyId: 'client-a' } },
    ...init,
  } as unknown as APIGatewayProxyEvent;
}

const body = (over: Record<string, unknown> = {}): string =>
  JSON.stringify({
    digest: createHash('sha256').update('x').digest('base64'),
    digestAlgorithm: 'SHA-256',
    keyType: 'EC-P256',
    requestId: randomUUID(),
    identityAssertion: `eyJhbGciOiJFUzI1NiJ9.${Buffer.from(randomUUID()).toString('base64url')}.c2ln`,
    ...over,
  });

const errorOf = (res: { body: string }): { code: string; message: string } =>
  (JSON.parse(res.body) as { error: { code: string; message: string } }).error;

test('a valid request is stored as received, queued, and answered 202 with a Location', async () => {
  const deps = memoryDeps();
  const res = await handleApiEvent(event('POST', '/sign-requests', { body: body() }), deps);
  expect(res.statusCode).toBe(202);
  const { id, status } = JSON.parse(res.body) as { id: string; status: string };
  expect(status).toBe('received');
  expect(res.headers?.Location).toBe(`/v1/sign-requests/${id}`);
  expect(deps.sent).toEqual([id]);
  expect(deps.records.get(id)).toMatchObject({
    clientId: 'client-a',
    status: 'received',
    signatureAlgorithm: 'ECDSA',
  });
});

test('defaults: RSA-2048 with RSASSA-PKCS1-v1_5', async () => {
  const deps = memoryDeps();
  const parsed = JSON.parse(body()) as Record<string, unknown>;
  delete parsed.keyType;
  const res = await handleApiEvent(event('POST', '/sign-requests', { body: JSON.stringify(parsed) }), deps);
  const { id } = JSON.parse(res.body) as { id: string };
  expect(deps.records.get(id)).toMatchObject({
    keyType: 'RSA-2048',
    signatureAlgorithm: 'RSASSA-PKCS1-v1_5',
  });
});

describe('admission by key supply and per-client share', () => {
  /** EC-P256: 2 pool keys, 1 on the fly, reserve 1: capacity 3, one client alone at most 2 open. */
  function admitted(): ApiDeps & { records: Map<string, SignRequestRecord> } {
    const deps = memoryDeps();
    const admission = new SignRequestAdmission(
      {
        available: async (keyType) => (keyType === 'EC-P256' ? 2 : 0),
        // The open requests as the index lists them: the stored records not yet terminal.
        openCounts: async () => {
          const byClient: Record<string, number> = {};
          for (const r of deps.records.values()) byClient[r.clientId] = (byClient[r.clientId] ?? 0) + 1;
          return { byType: { 'EC-P256': deps.records.size }, byClient: { 'EC-P256': byClient } };
        },
      },
      { policy: 'fallback', onTheFly: 1, clientReserve: 1, maxAgeMs: 0 },
    );
    return Object.assign(deps, { admission });
  }
  const from = (client: string, b: string) =>
    event('POST', '/sign-requests', {
      body: b,
      requestContext: { stage: 'v1', identity: { apiKeyId: client } } as never,
    });

  test('a client past its share is refused 429 CLIENT_SHARE_EXCEEDED with Retry-After; another client still gets in; then 503 KEYS_UNAVAILABLE for all', async () => {
    const deps = admitted();
    for (let i = 0; i < 2; i++) expect((await handleApiEvent(from('a', body()), deps)).statusCode).toBe(202);
    const third = await handleApiEvent(from('a', body()), deps);
    expect([third.statusCode, errorOf(third).code, third.headers?.['Retry-After']]).toEqual([
      429,
      'CLIENT_SHARE_EXCEEDED',
      '30',
    ]);
    expect((await handleApiEvent(from('b', body()), deps)).statusCode).toBe(202);
    const full = await handleApiEvent(from('c', body()), deps);
    expect([full.statusCode, errorOf(full).code]).toEqual([503, 'KEYS_UNAVAILABLE']);
    expect(deps.records.size).toBe(3);
  });

  test('a refused request costs no assertion check; an invalid assertion is not counted as open', async () => {
    const deps = admitted();
    let verified = 0;
    const verify = deps.identity.verifier.verify;
    const counting = {
      ...deps,
      identity: {
        ...deps.identity,
        verifier: { verify: async (...args: Parameters<typeof verify>) => (verified++, verify(...args)) },
      },
    };
    for (let i = 0; i < 2; i++)
      expect((await handleApiEvent(from('a', body()), counting)).statusCode).toBe(202);
    expect(verified).toBe(2);
    expect((await handleApiEvent(from('a', body()), counting)).statusCode).toBe(429);
    expect(verified).toBe(2);
    // A request whose assertion is refused is not counted: client b still has room for one.
    const refusing = {
      ...deps,
      identity: { ...deps.identity, verifier: { verify: async () => Promise.reject(new Error('down')) } },
    };
    expect((await handleApiEvent(from('b', body()), refusing)).statusCode).toBe(500);
    expect((await handleApiEvent(from('b', body()), deps)).statusCode).toBe(202);
  });

  test('a resend of a request accepted before is answered 200 even while new ones are refused', async () => {
    const deps = admitted();
    const first = body();
    expect((await handleApiEvent(from('a', first), deps)).statusCode).toBe(202);
    expect((await handleApiEvent(from('a', body()), deps)).statusCode).toBe(202);
    const resend = await handleApiEvent(from('a', first), deps);
    expect(resend.statusCode).toBe(200);
  });

  test('counts the requests accepted since the last read by their weight', async () => {
    const admission = new SignRequestAdmission(
      {
        available: async () => 100,
        openCounts: async () => ({ byType: {}, byClient: {} }),
      },
      { policy: 'fallback', onTheFly: 0, clientReserve: 10, maxAgeMs: 60_000 },
    );
    // Capacity 100, one client at most 90: nine requests of 50 B-LT documents (10 each).
    for (let i = 0; i < 9; i++)
      expect((await admission.decide('EC-P256', 'a', 10)).decision.kind).toBe('accept');
    expect((await admission.decide('EC-P256', 'a', 1)).decision).toMatchObject({
      code: 'CLIENT_SHARE_EXCEEDED',
    });
    expect((await admission.decide('EC-P256', 'b', 10)).decision).toEqual({ kind: 'accept' });
    expect((await admission.decide('EC-P256', 'c', 1)).decision).toMatchObject({ code: 'KEYS_UNAVAILABLE' });
  });

  test('counts are read at most once per maxAgeMs, and the requests accepted since are counted meanwhile', async () => {
    let reads = 0;
    let now = 0;
    const admission = new SignRequestAdmission(
      {
        available: async (keyType) => (keyType === 'EC-P256' ? 100 : 0),
        openCounts: async () => (reads++, { byType: {}, byClient: {} }),
      },
      { policy: 'fallback', onTheFly: 0, clientReserve: 10, maxAgeMs: 1000, clock: () => now },
    );
    // Decided concurrently: each decision sees the ones before it.
    const decisions = (
      await Promise.all(Array.from({ length: 91 }, () => admission.decide('EC-P256', 'a')))
    ).map((d) => d.decision);
    expect(decisions.filter((d) => d.kind === 'accept')).toHaveLength(90);
    expect(decisions[90]).toMatchObject({ code: 'CLIENT_SHARE_EXCEEDED' });
    expect(reads).toBe(1);
    now = 1000;
    const next = await admission.decide('EC-P256', 'a');
    expect(next.decision).toEqual({ kind: 'accept' });
    expect(reads).toBe(2);
    // A request not accepted after all no longer counts.
    for (let i = 0; i < 89; i++) await admission.decide('EC-P256', 'a');
    expect((await admission.decide('EC-P256', 'a')).decision).toMatchObject({
      code: 'CLIENT_SHARE_EXCEEDED',
    });
    next.cancel();
    expect((await admission.decide('EC-P256', 'a')).decision).toEqual({ kind: 'accept' });
  });
});

test('no caller identity is 401', async () => {
  const res = await handleApiEvent(
    event('POST', '/sign-requests', { body: body(), requestContext: { identity: {} } as never }),
    memoryDeps(),
  );
  expect([res.statusCode, errorOf(res).code]).toEqual([401, 'UNAUTHENTICATED']);
});

test('reject policy with an empty pool is 429 with Retry-After, and nothing is stored', async () => {
  const deps = memoryDeps({
    settings: {
      maxBodyBytes: 8192,
      retentionSeconds: 3600,
      rejectWhenPoolEmpty: true,
      retryAfterSeconds: 42,
    },
  });
  const res = await handleApiEvent(event('POST', '/sign-requests', { body: body() }), deps);
  expect([res.statusCode, errorOf(res).code, res.headers?.['Retry-After']]).toEqual([
    429,
    'POOL_EMPTY',
    '42',
  ]);
  expect(deps.records.size).toBe(0);
});

test('a queue failure undoes the record and answers 503', async () => {
  const deps = memoryDeps();
  const failing = {
    ...deps,
    queue: {
      enqueue: async () => {
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
      depth: deps.queue.depth,
    },
  };
  const res = await handleApiEvent(event('POST', '/sign-requests', { body: body() }), failing);
  expect([res.statusCode, errorOf(res).code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
  expect(deps.records.size).toBe(0);
});

test('a DynamoDB outage is 503, a bug is 500 without details', async () => {
  const down = memoryDeps();
  const sdkError = Object.assign(new Error('boom'), { $metadata: { httpStatusCode: 500 } });
  const res = await handleApiEvent(event('GET', '/health'), {
    ...down,
    pool: { available: async () => Promise.reject(sdkError) },
  });
  expect([res.statusCode, errorOf(res).code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
  const seen: unknown[] = [];
  const bug = await handleApiEvent(
    event('GET', '/health'),
    { ...down, pool: { available: async () => Promise.reject(new TypeError('x is undefined')) } },
    (e) => seen.push(e),
  );
  expect([bug.statusCode, errorOf(bug).code, errorOf(bug).message]).toEqual([
    500,
    'INTERNAL_ERROR',
    'internal error',
  ]);
  expect(bug.body).not.toContain('undefined');
  expect(seen).toHaveLength(1);
});

test('unsupported media type, invalid UTF-8 and non-object bodies are 4xx', async () => {
  const deps = memoryDeps();
  const media = await handleApiEvent(
    event('POST', '/sign-requests', { body: body(), headers: { 'content-type': 'text/plain' } }),
    deps,
  );
  expect([media.statusCode, errorOf(media).code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
  const bad = await handleApiEvent(
    event('POST', '/sign-requests', {
      body: Buffer.from([0x7b, 0xff, 0x7d]).toString('base64'),
      isBase64Encoded: true,
    }),
    deps,
  );
  expect([bad.statusCode, errorOf(bad).code]).toEqual([400, 'VALIDATION_FAILED']);
  for (const raw of ['[]', '"x"', 'null', '1']) {
    const res = await handleApiEvent(event('POST', '/sign-requests', { body: raw }), deps);
    expect(res.statusCode).toBe(400);
  }
});

test('long-poll returns as soon as the record is terminal', async () => {
  const deps = memoryDeps();
  const created = await handleApiEvent(event('POST', '/sign-requests', { body: body() }), deps);
  const { id } = JSON.parse(created.body) as { id: string };
  setTimeout(() => {
    const r = deps.records.get(id)!;
    deps.records.set(id, {
      ...r,
      status: 'signed',
      startedAt: r.receivedAt + 5,
      finishedAt: r.receivedAt + 25,
    });
  }, 150);
  const started = Date.now();
  const res = await handleApiEvent(
    event('GET', '/sign-requests/{id}', { pathParameters: { id }, queryStringParameters: { wait: '5' } }),
    deps,
  );
  const view = JSON.parse(res.body) as { status: string; timings: { waitMs: number; processMs: number } };
  expect(view.status).toBe('signed');
  expect(view.timings).toMatchObject({ waitMs: 5, processMs: 20 });
  expect(Date.now() - started).toBeLessThan(1500);
});

const signLater = (deps: ReturnType<typeof memoryDeps>, id: string, afterMs: number): void => {
  setTimeout(() => {
    const r = deps.records.get(id)!;
    deps.records.set(id, {
      ...r,
      status: 'signed',
      startedAt: r.receivedAt + 5,
      finishedAt: r.receivedAt + 25,
    });
  }, afterMs);
};

test('with word of ended requests, a wait reads the record once when the word comes, not by polling', async () => {
  const endings = new RequestEndingSignals();
  const deps = memoryDeps({ endings });
  let reads = 0;
  const counted: ApiDeps = {
    ...deps,
    requests: { ...deps.requests, get: (id: string) => (reads++, deps.requests.get(id)) },
  };
  const raw = body();
  const { requestId: id } = JSON.parse(raw) as { requestId: string };
  // Signed after 400 ms, word 50 ms later: a poll every 25 ms would have read about 16 times by then.
  signLater(deps, id, 400);
  setTimeout(() => endings.announce(id), 450);
  const started = Date.now();
  const res = await handleApiEvent(
    event('POST', '/sign-requests', { body: raw, queryStringParameters: { wait: '5' } }),
    counted,
  );
  expect(JSON.parse(res.body)).toMatchObject({ id, status: 'signed' });
  expect(Date.now() - started).toBeLessThan(900);
  expect(reads).toBe(1);
  // A false word (the request has not ended) costs one read; the wait goes on to the deadline, then the
  // fallback read (every second at least) and no more.
  reads = 0;
  const other = body();
  const { requestId: open } = JSON.parse(other) as { requestId: string };
  setTimeout(() => endings.announce(open), 100);
  const waited = await handleApiEvent(
    event('POST', '/sign-requests', { body: other, queryStringParameters: { wait: '2' } }),
    counted,
  );
  expect(waited.statusCode).toBe(202);
  expect(reads).toBeGreaterThanOrEqual(1);
  expect(reads).toBeLessThanOrEqual(3);
});

test('a lost word: the wait still ends by its fallback read', async () => {
  const deps = memoryDeps({ endings: new RequestEndingSignals() });
  const raw = body();
  const { requestId: id } = JSON.parse(raw) as { requestId: string };
  signLater(deps, id, 100);
  const started = Date.now();
  const res = await handleApiEvent(
    event('POST', '/sign-requests', { body: raw, queryStringParameters: { wait: '5' } }),
    deps,
  );
  expect(JSON.parse(res.body)).toMatchObject({ id, status: 'signed' });
  const took = Date.now() - started;
  expect(took).toBeGreaterThanOrEqual(900);
  expect(took).toBeLessThan(2500);
});

test("with word of ended requests, a wait for a request in a backlog reads by the request's age, not every second", async () => {
  const deps = memoryDeps({ endings: new RequestEndingSignals() });
  let reads = 0;
  const counted: ApiDeps = {
    ...deps,
    requests: { ...deps.requests, get: (id: string) => (reads++, deps.requests.get(id)) },
  };
  const raw = body();
  const { requestId: id } = JSON.parse(raw) as { requestId: string };
  await handleApiEvent(event('POST', '/sign-requests', { body: raw }), counted);
  // Accepted 10 s ago and still waiting: its fallback read is 5 s away, beyond this 3 s wait.
  const r = deps.records.get(id)!;
  deps.records.set(id, { ...r, receivedAt: r.receivedAt - 10_000 });
  reads = 0;
  const res = await handleApiEvent(
    event('GET', '/sign-requests/{id}', { pathParameters: { id }, queryStringParameters: { wait: '3' } }),
    counted,
  );
  expect(JSON.parse(res.body)).toMatchObject({ id, status: 'received' });
  expect(reads).toBe(1);
});

test('POST with wait answers 200 with the request as GET answers it once it is signed within the wait', async () => {
  const deps = memoryDeps();
  const raw = body();
  const { requestId: id } = JSON.parse(raw) as { requestId: string };
  signLater(deps, id, 150);
  const started = Date.now();
  const res = await handleApiEvent(
    event('POST', '/sign-requests', { body: raw, queryStringParameters: { wait: '5' } }),
    deps,
  );
  expect(Date.now() - started).toBeLessThan(1500);
  expect(res.statusCode).toBe(200);
  expect(res.headers?.Location).toBe(`/v1/sign-requests/${id}`);
  expect(JSON.parse(res.body)).toMatchObject({ id, status: 'signed', timings: { waitMs: 5, processMs: 20 } });
  expect(deps.sent).toEqual([id]);
  const get = await handleApiEvent(event('GET', '/sign-requests/{id}', { pathParameters: { id } }), deps);
  expect(JSON.parse(res.body)).toEqual(JSON.parse(get.body));
});

test('POST with wait answers 202 with Location when the request has not ended within the wait; wait=0 at once', async () => {
  const deps = memoryDeps();
  const started = Date.now();
  const waited = await handleApiEvent(
    event('POST', '/sign-requests', { body: body(), queryStringParameters: { wait: '1' } }),
    deps,
  );
  expect(Date.now() - started).toBeGreaterThanOrEqual(700);
  expect(waited.statusCode).toBe(202);
  const { id } = JSON.parse(waited.body) as { id: string };
  expect(JSON.parse(waited.body)).toEqual({ id, status: 'received' });
  expect(waited.headers?.Location).toBe(`/v1/sign-requests/${id}`);
  const raw = body();
  signLater(deps, (JSON.parse(raw) as { requestId: string }).requestId, 0);
  const immediate = await handleApiEvent(
    event('POST', '/sign-requests', { body: raw, queryStringParameters: { wait: '0' } }),
    deps,
  );
  expect(immediate.statusCode).toBe(202);
  expect(JSON.parse(immediate.body)).toMatchObject({ status: 'received' });
});

test('a resend with wait is not queued again and is answered 200 with the request as it stands', async () => {
  const deps = memoryDeps();
  const raw = body();
  const first = await handleApiEvent(event('POST', '/sign-requests', { body: raw }), deps);
  const { id } = JSON.parse(first.body) as { id: string };
  const r = deps.records.get(id)!;
  deps.records.set(id, { ...r, status: 'signing', startedAt: r.receivedAt + 5 });
  signLater(deps, id, 100);
  const resend = await handleApiEvent(
    event('POST', '/sign-requests', { body: raw, queryStringParameters: { wait: '5' } }),
    deps,
  );
  expect(resend.statusCode).toBe(200);
  expect(JSON.parse(resend.body)).toMatchObject({ id, status: 'signed' });
  expect(deps.sent).toEqual([id]);
  // Without wait, a resend is answered as before.
  const plain = await handleApiEvent(event('POST', '/sign-requests', { body: raw }), deps);
  expect(plain.statusCode).toBe(200);
  expect(JSON.parse(plain.body)).toEqual({ id, status: 'signed' });
});

test('a bad wait on POST is refused before anything is stored, queued or claimed', async () => {
  const deps = memoryDeps();
  const raw = body();
  for (const wait of ['21', 'x', '-1', '1.5']) {
    const res = await handleApiEvent(
      event('POST', '/sign-requests', { body: raw, queryStringParameters: { wait } }),
      deps,
    );
    expect(res.statusCode).toBe(400);
    expect(errorOf(res).code).toBe('VALIDATION_FAILED');
  }
  expect(deps.records.size).toBe(0);
  expect(deps.sent).toEqual([]);
  // The assertion was not spent: the same request is accepted now.
  expect((await handleApiEvent(event('POST', '/sign-requests', { body: raw }), deps)).statusCode).toBe(202);
});

test('format cms records the AdES profile (CAdES-B-B by default); raw takes no profile; unknown values are refused', async () => {
  const deps = memoryDeps();
  const cms = await handleApiEvent(event('POST', '/sign-requests', { body: body({ format: 'cms' }) }), deps);
  expect(cms.statusCode).toBe(202);
  const { id } = JSON.parse(cms.body) as { id: string };
  expect(deps.records.get(id)).toMatchObject({ format: 'cms', profile: 'CAdES-B-B' });
  const pades = await handleApiEvent(
    event('POST', '/sign-requests', { body: body({ format: 'cms', profile: 'PAdES-B-B' }) }),
    deps,
  );
  expect(deps.records.get((JSON.parse(pades.body) as { id: string }).id)).toMatchObject({
    profile: 'PAdES-B-B',
  });
  for (const over of [
    { profile: 'PAdES-B-B' },
    { format: 'cms', profile: 'XAdES-B-B' },
    { format: 'pkcs7' },
    { format: 'cms', digest: Buffer.alloc(31, 1).toString('base64') },
  ]) {
    const res = await handleApiEvent(event('POST', '/sign-requests', { body: body(over) }), deps);
    expect([res.statusCode, errorOf(res).code]).toEqual([400, 'VALIDATION_FAILED']);
  }
});

test('B-LTA is accepted for CAdES as for PAdES (the client adds the last time-stamp); minimumLevel above level is refused', async () => {
  const deps = memoryDeps();
  for (const profile of ['CAdES-B-B', 'PAdES-B-B']) {
    const res = await handleApiEvent(
      event('POST', '/sign-requests', {
        body: body({ format: 'cms', profile, level: 'B-LTA', minimumLevel: 'B-LT' }),
      }),
      deps,
    );
    expect(res.statusCode).toBe(202);
    expect(deps.records.get((JSON.parse(res.body) as { id: string }).id)).toMatchObject({
      profile,
      level: 'B-LTA',
      minimumLevel: 'B-LT',
    });
  }
  const above = await handleApiEvent(
    event('POST', '/sign-requests', { body: body({ format: 'cms', level: 'B-LT', minimumLevel: 'B-LTA' }) }),
    deps,
  );
  expect([above.statusCode, errorOf(above).code]).toEqual([400, 'VALIDATION_FAILED']);
});

describe('POST /sign-requests/{id}/revocation', () => {
  const revocationEvent = (id: string, reason: unknown, client = 'client-a') =>
    event('POST', '/sign-requests/{id}/revocation', {
      pathParameters: { id },
      body: JSON.stringify({ reason }),
      requestContext: { stage: 'v1', identity: { apiKeyId: client } } as never,
    });

  async function signedRequest(deps: ReturnType<typeof memoryDeps>): Promise<string> {
    const created = await handleApiEvent(event('POST', '/sign-requests', { body: body() }), deps);
    const { id } = JSON.parse(created.body) as { id: string };
    deps.records.set(id, { ...deps.records.get(id)!, status: 'signed', certificateSerial: 'ab12' });
    return id;
  }

  /** A new revocation's audit receipt, as the revocation function hands it on. */
  const RECEIPT = {
    chain: 1,
    sequence: 7,
    hash: 'a'.repeat(64),
    leafIndex: 0,
    treeSize: 1,
    path: [],
    head: { keyLabel: 'audit-checkpoint-v1', algorithm: 'ECDSA-P384-SHA384' as const, signature: 'MEUC' },
  };

  /** The CA side in memory: request ids registered to clients, certificates issued per request. */
  function memoryRevoker(issued: Map<string, string>) {
    const owners = new Map<string, string>();
    const revoked = new Map<string, string>();
    const calls: unknown[] = [];
    const revoker: NonNullable<ApiDeps['revoker']> = {
      registerRequestOwner: async (requestId, clientId) => {
        if ((owners.get(requestId) ?? clientId) !== clientId) return false;
        owners.set(requestId, clientId);
        return true;
      },
      revokeRequest: async (requestId, reason, clientId) => {
        calls.push([requestId, reason, clientId]);
        if (owners.get(requestId) !== clientId) return { outcome: 'not-owned' };
        const serialHex = issued.get(requestId);
        if (!serialHex) return { outcome: 'unknown' };
        const outcome = revoked.has(serialHex) ? 'already-revoked' : 'revoked';
        if (!revoked.has(serialHex)) revoked.set(serialHex, reason);
        return {
          outcome,
          serialHex,
          reason: revoked.get(serialHex)!,
          revokedAt: Date.UTC(2026, 10, 1),
          ...(outcome === 'revoked' ? { receipt: RECEIPT } : {}),
        };
      },
    };
    return { revoker, owners, calls };
  }

  test("revokes the caller's certificate through the CA; idempotent; another client's request is not found", async () => {
    const issued = new Map<string, string>();
    const ca = memoryRevoker(issued);
    const deps = memoryDeps({ revoker: ca.revoker });
    const id = await signedRequest(deps);
    expect(ca.owners.get(id)).toBe('client-a');
    issued.set(id, 'ab12');
    const res = await handleApiEvent(revocationEvent(id, 'keyCompromise'), deps);
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toEqual({
      id,
      certificateSerial: 'ab12',
      status: 'revoked',
      reason: 'keyCompromise',
      revokedAt: '2026-11-01T00:00:00.000Z',
      receipt: RECEIPT,
    });
    const again = JSON.parse((await handleApiEvent(revocationEvent(id, 'superseded'), deps)).body) as Record<
      string,
      unknown
    >;
    expect(again).toMatchObject({ alreadyRevoked: true, reason: 'keyCompromise' });
    expect(again.receipt).toBeUndefined();
    expect(ca.calls).toEqual([
      [id, 'keyCompromise', 'client-a'],
      [id, 'superseded', 'client-a'],
    ]);
    const foreign = await handleApiEvent(revocationEvent(id, 'keyCompromise', 'client-b'), deps);
    expect([foreign.statusCode, errorOf(foreign).code]).toEqual([404, 'NOT_FOUND']);
  });

  test("the serial comes from the CA, never from the record; a record rewritten as another client's is not found", async () => {
    const issued = new Map<string, string>();
    const ca = memoryRevoker(issued);
    const deps = memoryDeps({ revoker: ca.revoker });
    const own = await signedRequest(deps);
    issued.set(own, 'cafe');
    // The record names someone else's serial: the CA revokes this request's own certificate.
    deps.records.set(own, { ...deps.records.get(own)!, certificateSerial: 'beef' });
    const res = await handleApiEvent(revocationEvent(own, 'keyCompromise'), deps);
    expect(JSON.parse(res.body)).toMatchObject({ certificateSerial: 'cafe' });
    // Another client's request, its record rewritten to name this client: the CA knows better.
    const victim = await signedRequest(deps);
    issued.set(victim, 'beef');
    ca.owners.set(victim, 'client-b');
    const stolen = await handleApiEvent(revocationEvent(victim, 'keyCompromise'), deps);
    expect([stolen.statusCode, errorOf(stolen).code]).toEqual([404, 'NOT_FOUND']);
    // A request id registered to another client is refused before anything is stored.
    const taken = body();
    ca.owners.set(JSON.parse(taken).requestId as string, 'client-b');
    const refused = await handleApiEvent(event('POST', '/sign-requests', { body: taken }), deps);
    expect([refused.statusCode, errorOf(refused).code]).toEqual([409, 'REQUEST_ID_CONFLICT']);
    expect(deps.records.has(JSON.parse(taken).requestId as string)).toBe(false);
  });

  test('a request without a certificate is a conflict; a bad reason or a CA outage is refused', async () => {
    const deps = memoryDeps({
      revoker: {
        registerRequestOwner: async () => true,
        revokeRequest: async () => {
          throw Object.assign(new Error('down'), { code: 'CA_UNAVAILABLE' });
        },
      },
    });
    const created = await handleApiEvent(event('POST', '/sign-requests', { body: body() }), deps);
    const { id } = JSON.parse(created.body) as { id: string };
    const unsigned = await handleApiEvent(revocationEvent(id, 'keyCompromise'), deps);
    expect([unsigned.statusCode, errorOf(unsigned).code]).toEqual([409, 'NOT_SIGNED']);
    const signed = await signedRequest(deps);
    for (const reason of ['cACompromise', 'removeFromCRL', 42, undefined]) {
      const res = await handleApiEvent(revocationEvent(signed, reason), deps);
      expect([res.statusCode, errorOf(res).code]).toEqual([400, 'VALIDATION_FAILED']);
    }
    const down = await handleApiEvent(revocationEvent(signed, 'keyCompromise'), deps);
    expect([down.statusCode, errorOf(down).code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
  });
});

test('health: liveness for anyone, pool and queue depths only for an identified caller', async () => {
  const deps = memoryDeps();
  const anonymous = await handleApiEvent(
    event('GET', '/health', { requestContext: { stage: 'v1', identity: {} } as never }),
    deps,
  );
  expect([anonymous.statusCode, JSON.parse(anonymous.body)]).toEqual([200, { status: 'ok' }]);
  const identified = JSON.parse((await handleApiEvent(event('GET', '/health'), deps)).body) as Record<
    string,
    unknown
  >;
  expect(identified).toMatchObject({ status: 'ok', pool: { 'RSA-2048': 3 }, queue: { depth: 0 } });
});

test('health: 503 starting with Retry-After until the service is ready, then 200 ok', async () => {
  let ready = false;
  const deps = memoryDeps({ ready: () => ready });
  const anonymous = event('GET', '/health', { requestContext: { stage: 'v1', identity: {} } as never });
  const starting = await handleApiEvent(anonymous, deps);
  expect([starting.statusCode, JSON.parse(starting.body), starting.headers?.['Retry-After']]).toEqual([
    503,
    { status: 'starting' },
    '2',
  ]);
  const identified = await handleApiEvent(event('GET', '/health'), deps);
  expect([identified.statusCode, JSON.parse(identified.body)]).toMatchObject([
    503,
    { status: 'starting', pool: { 'RSA-2048': 3 } },
  ]);
  ready = true;
  const up = await handleApiEvent(anonymous, deps);
  expect([up.statusCode, JSON.parse(up.body)]).toEqual([200, { status: 'ok' }]);
});
