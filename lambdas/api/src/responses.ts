import type { APIGatewayProxyResult } from 'aws-lambda';
import { ApiError } from './errors';

const JSON_HEADERS = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' };

export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return { statusCode: status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

export function errorResponse(error: ApiError): APIGatewayProxyResult {
  return json(error.status, { error: { code: error.code, message: error.message } }, { ...error.headers });
}
