import type { APIGatewayProxyResult } from 'aws-lambda';
import type { ClientFailure } from '@pipeline/core/shared';

const JSON_HEADERS = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' };

export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return { statusCode: status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
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
