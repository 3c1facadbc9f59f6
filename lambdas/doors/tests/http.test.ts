import type { APIGatewayProxyEvent } from 'aws-lambda';
import { bodyBytes, headerOf, json, redirect } from '../src';

const event = (init: Partial<APIGatewayProxyEvent>): APIGatewayProxyEvent =>
  ({ headers: {}, body: null, isBase64Encoded: false, ...init }) as APIGatewayProxyEvent;

test('headerOf reads a header whatever its spelling; absent is undefined', () => {
  const e = event({ headers: { 'Content-TYPE': 'application/json' } });
  expect(headerOf(e, 'content-type')).toBe('application/json');
  expect(headerOf(e, 'authorization')).toBeUndefined();
  expect(headerOf(event({ headers: null as never }), 'x')).toBeUndefined();
});

test("bodyBytes decodes API Gateway's base64 bodies", () => {
  expect(bodyBytes(event({ body: Buffer.from('ä').toString('base64'), isBase64Encoded: true }))).toEqual(
    Buffer.from('ä'),
  );
  expect(bodyBytes(event({ body: 'ä' }))).toEqual(Buffer.from('ä'));
  expect(bodyBytes(event({ body: null }))).toEqual(Buffer.alloc(0));
});

test('json and redirect', () => {
  expect(json(201, { a: 1 }, { 'Cache-Control': 'no-store' })).toEqual({
    statusCode: 201,
    headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' },
    body: '{"a":1}',
  });
  expect(redirect('https://rp.example/cb?code=x')).toEqual({
    statusCode: 302,
    headers: { Location: 'https://rp.example/cb?code=x', 'Cache-Control': 'no-store' },
    body: '',
  });
});
