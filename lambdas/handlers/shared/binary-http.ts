/**
 * The binary HTTP bindings of the public PKI endpoints (OCSP, the TSA) behind API Gateway: DER in a POST
 * body, DER out base64-encoded with its media type.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';

/** The DER body of a POST; undefined when there is none or it is larger than `maxBytes`. */
export function postedDer(event: APIGatewayProxyEvent, maxBytes: number): Buffer | undefined {
  if (event.httpMethod !== 'POST') return undefined;
  const body = event.body ?? '';
  const der = event.isBase64Encoded ? Buffer.from(body, 'base64') : Buffer.from(body, 'latin1');
  return der.length > 0 && der.length <= maxBytes ? der : undefined;
}

export function derResult(
  statusCode: number,
  contentType: string,
  der: Buffer,
  cacheControl = 'no-store',
): APIGatewayProxyResult {
  return {
    statusCode,
    headers: { 'Content-Type': contentType, 'Cache-Control': cacheControl },
    body: der.toString('base64'),
    isBase64Encoded: true,
  };
}
