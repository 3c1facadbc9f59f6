/**
 * The local gateway's own duties (what API Gateway does before the function runs): routing, API keys,
 * per-client throttling, the body cap. The handler here echoes what it received.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { call } from '../../client';
import { startGateway } from '../gateway';

let server: Server;
let base: string;
const received: Array<{ resource: string; clientId: unknown; id?: string }> = [];

beforeAll(async () => {
  server = await startGateway(
    {
      handler: async (event) => {
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
      },
      clients: [
        { clientId: 'a', apiKey: 'key-a' },
        { clientId: 'slow', apiKey: 'key-slow' },
      ],
      rateLimit: 1,
      burstLimit: 3,
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
    rawBody: 'x'.repeat(64 * 1024),
  });
  expect([res.status, res.body.error.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
  expect(received.length).toBe(before);
});
