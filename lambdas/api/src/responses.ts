import type { APIGatewayProxyResult } from 'aws-lambda';
import { json as doorJson } from '@pipeline/doors';
import type { ClientFailure } from '@pipeline/core/shared';

/** Every answer of the API: JSON, never cached. */
export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return doorJson(status, body, { 'Cache-Control': 'no-store', ...headers });
}

/** The API's wire form of a failure (the core's one mapping): `{ error: { code, message } }`. */
export function errorResponse(
  failure: ClientFailure,
  headers: Readonly<Record<string, string>> = {},
): APIGatewayProxyResult {
  const retryAfter: Record<string, string> =
    failure.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(failure.retryAfterSeconds) };
  return json(
    failure.status,
    { error: { code: failure.code, message: failure.message } },
    { ...retryAfter, ...headers },
  );
}
