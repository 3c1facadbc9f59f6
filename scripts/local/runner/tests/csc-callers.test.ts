/**
 * The local gateway's CSC limits per caller (csc-callers.ts), as the CSC web ACL's rules set them on AWS:
 * per source on every method, lower per source on the authorization endpoints, per client by its
 * client_id (query or form) or Basic credentials. A moved clock, no server.
 */
import type { IncomingMessage } from 'node:http';
import { CscCallers } from '../csc-callers';

const LIMITS = { sourcePerMinute: 30, authorizeSourcePerMinute: 10, clientPerMinute: 20 };

function setup() {
  let now = 0;
  const callers = new CscCallers(LIMITS, () => now);
  const call = (
    resource: string,
    options: { source?: string; query?: string; form?: string; basicUser?: string } = {},
  ) => {
    const headers: Record<string, string> = {};
    if (options.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    if (options.basicUser !== undefined)
      headers.authorization = `Basic ${Buffer.from(`${options.basicUser}:secret`).toString('base64')}`;
    const url = new URL(`http://gateway/csc/v2${resource}${options.query ? `?${options.query}` : ''}`);
    return callers.admit(
      { headers } as IncomingMessage,
      resource,
      options.source ?? '192.0.2.1',
      url,
      Buffer.from(options.form ?? ''),
    );
  };
  return { call, advance: (ms: number) => (now += ms) };
}

const admitted = (n: number, f: () => { ok: boolean }) =>
  Array.from({ length: n }, f).filter((d) => d.ok).length;

test('every CSC method: a minute of requests per source, then 429 until the bucket refills', () => {
  const { call, advance } = setup();
  expect(admitted(40, () => call('/info', { source: 'a' }))).toBe(LIMITS.sourcePerMinute);
  expect(call('/info', { source: 'a' })).toEqual({
    ok: false,
    message: 'too many requests from this source, retry later',
    retryAfterSeconds: 2,
  });
  // Another source is not affected; the first gets its rate back (30/min: one every 2 s).
  expect(call('/info', { source: 'b' }).ok).toBe(true);
  advance(2000);
  expect(call('/info', { source: 'a' }).ok).toBe(true);
});

test('the authorization endpoints: a lower limit per source, whatever client_id is named', () => {
  const { call } = setup();
  let i = 0;
  expect(admitted(15, () => call('/oauth2/authorize', { query: `client_id=c${i++}` }))).toBe(10);
  expect(call('/oauth2/pushed_authorize', { form: 'client_id=other' })).toMatchObject({
    ok: false,
    message: 'too many authorization requests from this source, retry later',
  });
  // The source's other methods go on.
  expect(call('/oauth2/token').ok).toBe(true);
});

test('per client, from many sources: by client_id in the query or the form, or by its Basic credentials', () => {
  const { call } = setup();
  let source = 0;
  const from = () => `10.0.0.${source++}`;
  expect(admitted(8, () => call('/oauth2/authorize', { source: from(), query: 'client_id=flood' }))).toBe(8);
  expect(admitted(8, () => call('/oauth2/token', { source: from(), form: 'client_id=flood' }))).toBe(8);
  expect(admitted(8, () => call('/oauth2/token', { source: from(), basicUser: 'flood' }))).toBe(4);
  expect(call('/oauth2/authorize', { source: from(), query: 'client_id=flood' })).toMatchObject({
    ok: false,
    message: 'too many requests for this client, retry later',
  });
  expect(call('/oauth2/authorize', { source: from(), query: 'client_id=other' }).ok).toBe(true);
});

test('a refused request takes from none of the limits it passed', () => {
  const { call } = setup();
  expect(admitted(10, () => call('/oauth2/authorize', { source: 'a', query: 'client_id=x' }))).toBe(10);
  // Refused for the source's authorizations: the client's and the source's overall rooms are untouched.
  for (let i = 0; i < 10; i++) call('/oauth2/authorize', { source: 'a', query: 'client_id=x' });
  expect(admitted(10, () => call('/oauth2/token', { source: 'b', basicUser: 'x' }))).toBe(10);
  expect(admitted(30, () => call('/info', { source: 'a' }))).toBe(LIMITS.sourcePerMinute - 10);
});
