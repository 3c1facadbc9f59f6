/**
 * The HTTP of every door (API Gateway's proxy integration): headers read case-insensitively, JSON
 * answers and redirects. Each door adds its own headers (the API: Cache-Control on every answer).
 */
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';

export type HttpEvent = APIGatewayProxyEvent;
export type HttpResult = APIGatewayProxyResult;

/** A request header by its name in lower case (API Gateway keeps the client's spelling). */
export function headerOf(event: HttpEvent, name: string): string | undefined {
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === name) return value ?? undefined;
  }
  return undefined;
}

/** The body's bytes (API Gateway base64-encodes what it takes for binary). */
export function bodyBytes(event: HttpEvent): Buffer {
  const raw = event.body ?? '';
  return event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResult {
  return {
    statusCode: status,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

/** 302 to `location`, never cached (it carries a flow's state or a one-time code). */
export function redirect(location: string): HttpResult {
  return { statusCode: 302, headers: { Location: location, 'Cache-Control': 'no-store' }, body: '' };
}
