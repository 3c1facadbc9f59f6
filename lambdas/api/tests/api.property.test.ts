/**
 * Property-based: generated malformed and hostile requests never produce a 5xx or a crash, and every 4xx
 * carries a machine-readable code and a human message. Runs against the API function's logic with
 * in-memory ports (fast, many cases); the same property over HTTP through the real local pipeline is in
 * scripts/local/runner/tests/hostile-http.e2e.test.ts.
 */
import fc from 'fast-check';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { AssertionError } from '@pipeline/core/identity';
import type { SignRequestRecord } from '@pipeline/core/signing';
import { memoryAssertionStore } from '../../test-support/test-issuer';
import { handleApiEvent, type ApiDeps } from '../src';
import { hostileBody } from './arbitraries';

function deps(): ApiDeps {
  const records = new Map<string, SignRequestRecord>();
  return {
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
    // No generated token is signed by a trusted issuer: the verifier refuses each, as the real one would
    // (identity.test.ts covers identity assertions).
    identity: {
      verifier: {
        verify: async () =>
          Promise.reject(new AssertionError('ASSERTION_SIGNATURE_INVALID', 'not signed by a trusted issuer')),
      },
      assertions: memoryAssertionStore(),
    },
  };
}

function post(body: string, isBase64Encoded = false): APIGatewayProxyEvent {
  return {
    httpMethod: 'POST',
    resource: '/sign-requests',
    path: '/sign-requests',
    headers: { 'content-type': 'application/json' },
    body,
    isBase64Encoded,
    pathParameters: null,
    queryStringParameters: null,
    requestContext: { stage: 'v1', identity: { apiKeyId: 'client' } },
  } as unknown as APIGatewayProxyEvent;
}

test('hostile bodies: 2xx or 4xx with code and message, never 5xx', async () => {
  const d = deps();
  const unexpected: unknown[] = [];
  await fc.assert(
    fc.asyncProperty(hostileBody(), async (body) => {
      const res = await handleApiEvent(post(body), d, (e) => unexpected.push(e));
      expect(res.statusCode).toBeLessThan(500);
      if (res.statusCode >= 400) {
        const parsed = JSON.parse(res.body) as { error: { code: string; message: string } };
        expect(parsed.error.code).toMatch(/^[A-Z_]+$/);
        expect(parsed.error.message.length).toBeGreaterThan(0);
        expect(res.body).not.toMatch(/\bat .*\(.*:\d+:\d+\)/); // no stack trace
      }
    }),
    { numRuns: 1500 },
  );
  expect(unexpected).toEqual([]);
});

test('hostile paths and query strings on GET never produce a 5xx', async () => {
  const d = deps();
  await fc.assert(
    fc.asyncProperty(
      fc.string({ maxLength: 80 }),
      fc.option(fc.string({ maxLength: 10 })),
      async (id, wait) => {
        const res = await handleApiEvent(
          {
            ...post(''),
            httpMethod: 'GET',
            resource: '/sign-requests/{id}',
            pathParameters: { id },
            queryStringParameters: wait === null ? null : { wait },
          },
          d,
        );
        expect(res.statusCode).toBeGreaterThanOrEqual(400);
        expect(res.statusCode).toBeLessThan(500);
      },
    ),
    { numRuns: 500 },
  );
});
