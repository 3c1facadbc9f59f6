/**
 * On AWS every e-service calls with its IAM credentials (SigV4) and its API key, which selects its usage
 * plan entry (throttle, daily quota). The API function gets each key's principal (API_KEY_PRINCIPALS) and
 * refuses a request whose key is not the caller's: client A signing with its own credentials but client
 * B's API key would otherwise spend B's quota. The events are shaped as API Gateway passes them
 * (requestContext.identity: userArn of the SigV4 caller, apiKeyId of the x-api-key).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { loadPipelineConfig } from '@pipeline/config';
import { handleApiEvent } from '../src';
import { memoryDeps } from './memory-deps';

const A = 'arn:aws:iam::123456789012:role/tax-agency';
const B = 'arn:aws:iam::123456789012:role/pension-agency';
const KEY_A = 'a1b2c3d4e5';
const KEY_B = 'f6g7h8i9j0';

function deps(): ReturnType<typeof memoryDeps> {
  // As the CDK app configures the function: each key with its client's principal, one key bound to no one.
  const { apiKeyPrincipals } = loadPipelineConfig({
    API_KEY_PRINCIPALS: JSON.stringify({ [KEY_A]: A, [KEY_B]: B, unbound: '' }),
  });
  const base = memoryDeps({ pool: { available: async () => ({ 'EC-P256': 3 }) } });
  return { ...base, settings: { ...base.settings, apiKeyPrincipals } };
}

function call(
  identity: { userArn?: string; apiKeyId?: string },
  method = 'POST',
  resource = '/sign-requests',
  id?: string,
): APIGatewayProxyEvent {
  return {
    httpMethod: method,
    resource,
    path: resource,
    headers: { 'content-type': 'application/json' },
    body:
      method === 'POST'
        ? JSON.stringify({
            digest: createHash('sha256').update('x').digest('base64'),
            digestAlgorithm: 'SHA-256',
            keyType: 'EC-P256',
            requestId: randomUUID(),
            identityAssertion: `eyJhbGciOiJFUzI1NiJ9.${Buffer.from(randomUUID()).toString('base64url')}.c2ln`,
          })
        : null,
    isBase64Encoded: false,
    pathParameters: id ? { id } : null,
    queryStringParameters: null,
    requestContext: { stage: 'v1', identity: { caller: 'AROAEXAMPLE', ...identity } },
  } as unknown as APIGatewayProxyEvent;
}

const codeOf = (res: { body: string }): string =>
  (JSON.parse(res.body) as { error: { code: string } }).error.code;

test("client A's credentials with client B's API key: refused 403, nothing stored or queued", async () => {
  const d = deps();
  const res = await handleApiEvent(call({ userArn: A, apiKeyId: KEY_B }), d);
  expect(res.statusCode).toBe(403);
  expect(codeOf(res)).toBe('FORBIDDEN');
  expect(d.records.size).toBe(0);
  expect(d.sent).toEqual([]);
});

test('each client with its own key is served, under its own principal', async () => {
  const d = deps();
  for (const [principal, key] of [
    [A, KEY_A],
    [B, KEY_B],
  ]) {
    const res = await handleApiEvent(call({ userArn: principal, apiKeyId: key }), d);
    expect(res.statusCode).toBe(202);
  }
  expect([...d.records.values()].map((r) => r.clientId).sort()).toEqual([A, B].sort());
});

test("reading and revoking with another's key are refused too, before the record is looked at", async () => {
  const d = deps();
  const created = await handleApiEvent(call({ userArn: A, apiKeyId: KEY_A }), d);
  const { id } = JSON.parse(created.body) as { id: string };
  const read = await handleApiEvent(
    call({ userArn: A, apiKeyId: KEY_B }, 'GET', '/sign-requests/{id}', id),
    d,
  );
  expect([read.statusCode, codeOf(read)]).toEqual([403, 'FORBIDDEN']);
  const revoke = {
    ...call({ userArn: A, apiKeyId: KEY_B }, 'POST', '/sign-requests/{id}/revocation', id),
    body: JSON.stringify({ reason: 'unspecified' }),
  };
  const revoked = await handleApiEvent(revoke, d);
  expect([revoked.statusCode, codeOf(revoked)]).toEqual([403, 'FORBIDDEN']);
});

test('a key bound to no principal, an unknown key, or no SigV4 caller: refused', async () => {
  const d = deps();
  for (const identity of [
    { userArn: A, apiKeyId: 'unbound' },
    { userArn: A, apiKeyId: 'not-a-key' },
    { userArn: A },
    { apiKeyId: KEY_A },
  ]) {
    const res = await handleApiEvent(call(identity), d);
    expect([identity, res.statusCode, codeOf(res)]).toEqual([identity, 403, 'FORBIDDEN']);
  }
  expect(d.records.size).toBe(0);
});

test('the health details need a caller with its own key; liveness answers anyone', async () => {
  const d = deps();
  const own = await handleApiEvent(call({ userArn: A, apiKeyId: KEY_A }, 'GET', '/health'), d);
  expect(JSON.parse(own.body)).toHaveProperty('pool');
  const other = await handleApiEvent(call({ userArn: A, apiKeyId: KEY_B }, 'GET', '/health'), d);
  expect(JSON.parse(other.body)).toEqual({ status: 'ok' });
});
