/**
 * The HTTP of every door (API Gateway's proxy integration): headers read case-insensitively, JSON
 * answers and redirects. Each door adds its own headers (the API: Cache-Control on every answer).
 */
import { randomBytes } from 'node:crypto';
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

/**
 * An XHTML page that posts `fields` to `action` at once (a browser binding's form: SAML HTTP-POST, the
 * DSS-Ext SignResponse), with a button for a browser without scripts. Only its own nonce'd script runs,
 * and the form may go only to the action's origin.
 */
export function autoPostForm(action: string, fields: Readonly<Record<string, string>>): HttpResult {
  const nonce = randomBytes(16).toString('base64');
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}"/>`)
    .join('');
  const body =
    '<!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/>' +
    '<title>Continue</title></head><body>' +
    `<form method="post" action="${escapeHtml(action)}">${inputs}` +
    '<noscript><p>Your browser does not run scripts: press Continue.</p></noscript>' +
    '<button type="submit">Continue</button></form>' +
    `<script nonce="${nonce}">document.forms[0].submit();</script></body></html>`;
  return htmlResult(200, body, {
    'Content-Security-Policy': `default-src 'none'; script-src 'nonce-${nonce}'; form-action ${new URL(action).origin}; frame-ancestors 'none'`,
  });
}

/** An HTML page that says what went wrong (no citizen data, no secrets). */
export function errorPage(statusCode: number, title: string, message: string): HttpResult {
  const body =
    `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"/><title>${escapeHtml(title)}</title></head>` +
    `<body><h1>${escapeHtml(title)}</h1><p id="error">${escapeHtml(message)}</p></body></html>`;
  return htmlResult(statusCode, body, {
    'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
  });
}

function htmlResult(statusCode: number, body: string, headers: Record<string, string>): HttpResult {
  return {
    statusCode,
    headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', ...headers },
    body,
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
