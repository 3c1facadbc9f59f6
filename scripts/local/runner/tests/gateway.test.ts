/**
 * The local gateway's own duties (what API Gateway does before the function runs): routing, API keys,
 * the stage throttle per method, each client's throttle and daily quota, the body cap, the TSA's throttle
 * per source address, the CSC routes. The handler here echoes what it received.
 */
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PKI_SOURCE_LIMITS, TSA_RATE_LIMIT } from '@pipeline/resources';
import type { ApiLimits } from '@pipeline/config';
import { call } from '../../client';
import { Admission } from '../admission';
import { withCredentials } from '../api-keys';
import { startGateway, type GatewayOptions } from '../gateway';

let server: Server;
let base: string;
const received: Array<{ resource: string; clientId: unknown; id?: string }> = [];

const echo: GatewayOptions['handler'] = async (event) => {
  received.push({
    resource: event.resource,
    clientId: event.requestContext.identity.apiKeyId,
    id: event.pathParameters?.id,
  });
  return {
    statusCode: 200,
    body: JSON.stringify({ ok: true }),
    headers: { 'Content-Type': 'application/json' },
  };
};

function limits(
  stage: [rate: number, burst: number],
  client: [rate: number, burst: number, quotaPerDay?: number],
): ApiLimits {
  return {
    stage: { rateLimit: stage[0], burstLimit: stage[1] },
    client: { rateLimit: client[0], burstLimit: client[1], quotaPerDay: client[2] ?? 0 },
  };
}

/** A gateway of its own on a free port; its URL, and a close. */
async function gatewayWith(
  options: Partial<GatewayOptions>,
): Promise<{ base: string; close: () => Promise<void> }> {
  const own = await startGateway(
    {
      handler: echo,
      clients: [
        { clientId: 'a', apiKey: 'key-a' },
        { clientId: 'b', apiKey: 'key-b' },
      ],
      limits: limits([1000, 2000], [500, 1000]),
      ...options,
    },
    0,
  );
  return {
    base: `http://127.0.0.1:${(own.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => own.close(() => resolve())),
  };
}

beforeAll(async () => {
  server = await startGateway(
    {
      handler: echo,
      clients: [
        { clientId: 'a', apiKey: 'key-a' },
        { clientId: 'slow', apiKey: 'key-slow' },
      ],
      limits: limits([100, 200], [1, 3]),
    },
    0,
  );
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

test('routes under the stage, with path parameters and the client as the caller', async () => {
  const res = await call(`${base}/v1/sign-requests/abc`, { apiKey: 'key-a' });
  expect(res.status).toBe(200);
  expect(received.pop()).toEqual({ resource: '/sign-requests/{id}', clientId: 'a', id: 'abc' });
  const health = await call(`${base}/v1/health`);
  expect(health.status).toBe(200);
  expect(received.pop()).toMatchObject({ resource: '/health', clientId: null });
});

test('optional credentials on open routes: a valid key identifies the caller, a wrong one is refused', async () => {
  expect((await call(`${base}/v1/health`, { apiKey: 'key-a' })).status).toBe(200);
  expect(received.pop()).toMatchObject({ resource: '/health', clientId: 'a' });
  expect((await call(`${base}/v1/health`, { apiKey: 'key-x' })).status).toBe(403);
});

test('unknown routes are 404, wrong methods 405, missing and wrong keys 401 and 403', async () => {
  expect((await call(`${base}/sign-requests`, { apiKey: 'key-a' })).status).toBe(404);
  expect((await call(`${base}/v1/health`, { method: 'DELETE' })).status).toBe(405);
  expect((await call(`${base}/v1/sign-requests`, { body: {} })).status).toBe(401);
  expect((await call(`${base}/v1/sign-requests`, { apiKey: 'key-x', body: {} })).status).toBe(403);
});

test('a client over its burst gets 429 with Retry-After; other clients are unaffected', async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++)
    statuses.push((await call(`${base}/v1/sign-requests/x`, { apiKey: 'key-slow' })).status);
  expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
  const throttled = await call<{ error: { code: string } }>(`${base}/v1/sign-requests/x`, {
    apiKey: 'key-slow',
  });
  expect([throttled.status, throttled.body.error.code, throttled.headers.get('retry-after')]).toEqual([
    429,
    'THROTTLED',
    '1',
  ]);
  expect((await call(`${base}/v1/sign-requests/x`, { apiKey: 'key-a' })).status).toBe(200);
});

test('a body over the cap is 413 before the function runs', async () => {
  const before = received.length;
  const res = await call<{ error: { code: string } }>(`${base}/v1/sign-requests`, {
    apiKey: 'key-a',
    rawBody: 'x'.repeat(128 * 1024),
  });
  expect([res.status, res.body.error.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
  expect(received.length).toBe(before);
});

describe('IAM authorization (SigV4) and the caller passed to the function', () => {
  const [a, b] = withCredentials([
    { clientId: 'a', apiKey: 'key-a' },
    { clientId: 'b', apiKey: 'key-b' },
  ]);
  const seen: unknown[] = [];
  const identityEcho: GatewayOptions['handler'] = async (event) => {
    const { userArn, apiKeyId } = event.requestContext.identity;
    seen.push({ userArn, apiKeyId });
    return { statusCode: 200, body: '{}', headers: { 'Content-Type': 'application/json' } };
  };

  test("a signed call passes its signer as userArn and the key as apiKeyId, the key's owner or not", async () => {
    const gw = await gatewayWith({ handler: identityEcho, clients: [a, b] });
    try {
      const url = `${gw.base}/v1/sign-requests/x`;
      expect((await call(url, { apiKey: 'key-a', credentials: a })).status).toBe(200);
      expect(seen.pop()).toEqual({ userArn: 'a', apiKeyId: 'a' });
      // The gateway lets it through (API Gateway does too): the API function refuses the key that is not A's.
      expect((await call(url, { apiKey: 'key-b', credentials: a })).status).toBe(200);
      expect(seen.pop()).toEqual({ userArn: 'a', apiKeyId: 'b' });
      // Unsigned (allowed without requireSigV4): the key's own client.
      expect((await call(url, { apiKey: 'key-b' })).status).toBe(200);
      expect(seen.pop()).toEqual({ userArn: 'b', apiKeyId: 'b' });
      // A signature that does not verify is refused before the function runs.
      const forged = { accessKeyId: a.accessKeyId, secretAccessKey: b.secretAccessKey };
      const res = await call<{ error: { code: string } }>(url, { apiKey: 'key-a', credentials: forged });
      expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
      expect(seen).toEqual([]);
    } finally {
      await gw.close();
    }
  });

  test('with requireSigV4 an unsigned call of a keyed method is 401; open methods stay open', async () => {
    const gw = await gatewayWith({ handler: identityEcho, clients: [a, b], requireSigV4: true });
    try {
      const res = await call<{ error: { code: string } }>(`${gw.base}/v1/sign-requests/x`, {
        apiKey: 'key-a',
      });
      expect([res.status, res.body.error.code]).toEqual([401, 'UNAUTHENTICATED']);
      expect(seen).toEqual([]);
      expect((await call(`${gw.base}/v1/health`)).status).toBe(200);
      seen.length = 0;
    } finally {
      await gw.close();
    }
  });
});

describe('throttles and quotas', () => {
  test('the stage limit is shared by every client of a method; a client within its own limit is refused when the stage is spent', async () => {
    let now = 1_000_000;
    const gw = await gatewayWith({ limits: limits([1, 4], [1, 3]), clock: () => now });
    try {
      const get = (key: string) =>
        call<{ error?: { code: string; message: string } }>(`${gw.base}/v1/sign-requests/x`, { apiKey: key });
      expect([(await get('key-a')).status, (await get('key-a')).status, (await get('key-a')).status]).toEqual(
        [200, 200, 200],
      );
      expect((await get('key-b')).status).toBe(200);
      const refused = await get('key-b');
      expect([refused.status, refused.body.error, refused.headers.get('retry-after')]).toEqual([
        429,
        { code: 'THROTTLED', message: 'too many requests' },
        '1',
      ]);
      // Another method has a stage bucket of its own (API Gateway's stage limit applies per method).
      expect((await call(`${gw.base}/v1/sign-requests`, { apiKey: 'key-b', body: {} })).status).toBe(200);
      now += 1000;
      expect((await get('key-b')).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  test("a client refused for its own limit uses none of the stage's room", async () => {
    const now = 1_000_000;
    const gw = await gatewayWith({ limits: limits([1, 3], [1, 2]), clock: () => now });
    try {
      const get = (key: string) => call(`${gw.base}/v1/sign-requests/x`, { apiKey: key });
      const a: number[] = [];
      for (let i = 0; i < 6; i++) a.push((await get('key-a')).status);
      expect(a).toEqual([200, 200, 429, 429, 429, 429]);
      expect((await get('key-b')).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  test('a client past its daily quota gets 429 QUOTA_EXCEEDED until the next day (UTC); others go on', async () => {
    const midnight = Date.UTC(2026, 10, 24);
    let now = midnight - 90_000;
    const gw = await gatewayWith({ limits: limits([1000, 2000], [500, 1000, 2]), clock: () => now });
    try {
      const get = (key: string) =>
        call<{ error?: { code: string } }>(`${gw.base}/v1/sign-requests/x`, { apiKey: key });
      expect([(await get('key-a')).status, (await get('key-a')).status]).toEqual([200, 200]);
      const refused = await get('key-a');
      expect([refused.status, refused.body.error?.code, refused.headers.get('retry-after')]).toEqual([
        429,
        'QUOTA_EXCEEDED',
        '90',
      ]);
      expect((await get('key-b')).status).toBe(200);
      // Open routes are not in the usage plan: no quota.
      expect((await call(`${gw.base}/v1/health`, { apiKey: 'key-a' })).status).toBe(200);
      now = midnight;
      expect((await get('key-a')).status).toBe(200);
    } finally {
      await gw.close();
    }
  });
});

/** A time-stamp request (any body: the echo handler answers) from a given local source address. */
function postTsa(base: string, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}/pki/tsa`, { method: 'POST', localAddress }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(Buffer.from([0x30, 0x00]));
  });
}

test("the TSA's throttle is per source address: one caller spends its own share, not everyone's", async () => {
  let now = 1_000_000;
  const gw = await gatewayWith({ clock: () => now, pki: { dir: '/nonexistent', ocsp: echo, tsa: echo } });
  try {
    // A source's burst is two seconds' worth of its share, well under the TSA's limit for all.
    const burst = (PKI_SOURCE_LIMITS.timeStampsPerMinute / 60) * 2;
    expect(burst).toBeLessThan(TSA_RATE_LIMIT);
    const attacker: number[] = [];
    for (let i = 0; i < burst + 20; i++) attacker.push(await postTsa(gw.base, '127.0.0.2'));
    expect(attacker.slice(0, burst)).toEqual(Array(burst).fill(200));
    expect(attacker.slice(burst)).toEqual(Array(20).fill(429));
    // Others still get their time-stamps, each from its own share.
    for (const source of ['127.0.0.1', '127.0.0.3', '127.0.0.4'])
      expect(await postTsa(gw.base, source)).toBe(200);
    // The attacker's share refills at its own rate: one time-stamp's worth.
    now += 60_000 / PKI_SOURCE_LIMITS.timeStampsPerMinute;
    expect(await postTsa(gw.base, '127.0.0.2')).toBe(200);
    expect(await postTsa(gw.base, '127.0.0.2')).toBe(429);
  } finally {
    await gw.close();
  }
});

describe('Admission', () => {
  test('Retry-After of a throttle is the time to the next token, at least a second', () => {
    let now = 0;
    const admission = new Admission(limits([1000, 2000], [0.25, 1]), () => now);
    expect(admission.admit('GET /x', 'a')).toEqual({ ok: true });
    expect(admission.admit('GET /x', 'a')).toMatchObject({
      ok: false,
      code: 'THROTTLED',
      retryAfterSeconds: 4,
    });
    now += 3000;
    expect(admission.admit('GET /x', 'a')).toMatchObject({ ok: false, retryAfterSeconds: 1 });
    now += 1000;
    expect(admission.admit('GET /x', 'a')).toEqual({ ok: true });
  });

  test('requests without a client count against the stage only', () => {
    const admission = new Admission(limits([1, 2], [1, 1, 1]), () => 0);
    expect(admission.admit('GET /health', undefined)).toEqual({ ok: true });
    expect(admission.admit('GET /health', undefined)).toEqual({ ok: true });
    expect(admission.admit('GET /health', undefined)).toMatchObject({ ok: false, code: 'THROTTLED' });
    expect(admission.admit('GET /x', 'a')).toEqual({ ok: true });
  });
});

describe('the CSC API', () => {
  it('routes /csc/v2 to its handler without an API key, the IdP callback too, and refuses in the CSC form', async () => {
    const seen: Array<{ resource: string; query: unknown; apiKeyId: unknown }> = [];
    const csc: GatewayOptions['handler'] = async (event) => {
      seen.push({
        resource: event.resource,
        query: event.queryStringParameters,
        apiKeyId: event.requestContext.identity.apiKeyId,
      });
      return { statusCode: 200, body: '{}', headers: { 'Content-Type': 'application/json' } };
    };
    const own = await gatewayWith({ csc });
    try {
      expect((await fetch(`${own.base}/csc/v2/info`)).status).toBe(200);
      expect((await fetch(`${own.base}/callback?state=s&code=c`)).status).toBe(200);
      expect(seen).toEqual([
        { resource: '/info', query: null, apiKeyId: null },
        { resource: '/oauth2/callback', query: { state: 's', code: 'c' }, apiKeyId: null },
      ]);
      const unknown = await fetch(`${own.base}/csc/v2/credentials/authorize`, { method: 'POST' });
      expect([unknown.status, await unknown.json()]).toEqual([
        404,
        { error: 'not_found', error_description: 'no CSC method POST /csc/v2/credentials/authorize' },
      ]);
      const wrongMethod = await fetch(`${own.base}/csc/v2/oauth2/token`);
      expect([wrongMethod.status, ((await wrongMethod.json()) as { error: string }).error]).toEqual([
        405,
        'method_not_allowed',
      ]);
      expect(seen).toHaveLength(2);
    } finally {
      await own.close();
    }
  });
});
