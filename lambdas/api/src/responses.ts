import type { APIGatewayProxyResult } from 'aws-lambda';
import { json as doorJson } from '@pipeline/doors';
import type { ApiError } from './errors';

/** Every answer of the API: JSON, never cached. */
export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return doorJson(status, body, { 'Cache-Control': 'no-store', ...headers });
}

export function errorResponse(error: ApiError): APIGatewayProxyResult {
  return json(error.status, { error: { code: error.code, message: error.message } }, { ...error.headers });
}
