/** What a CSC call carries: its body (JSON, or a form), its client's or its access token's credentials. */
import { clientSecretMatches, type CscClient, type CscGrant, type TokenUse } from '@pipeline/core/csc';
import { bodyBytes, headerOf, newFlowId, type HttpEvent } from '@pipeline/doors';
import { CscError } from './errors';
import type { CscDoorDeps, CscSettings } from './types';

/** The door's clock in epoch seconds (the store's expiries). */
export const seconds = (deps: Pick<CscDoorDeps, 'now'>): number =>
  Math.floor((deps.now ?? Date.now)() / 1000);

/** A one-time secret (code, access token, responseID, request_uri): 256 random bits. */
export const randomSecret = newFlowId;

/** A JSON body, or a form (oauth2/token's usual encoding). */
export function parseBody(event: HttpEvent): Record<string, unknown> {
  if (!event.body) return {};
  const text = event.isBase64Encoded ? bodyBytes(event).toString('utf8') : event.body;
  if ((headerOf(event, 'content-type') ?? '').startsWith('application/x-www-form-urlencoded')) {
    return Object.fromEntries(new URLSearchParams(text));
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new CscError('invalid_request', 'the body is not a JSON object');
}

export function bearerToken(event: HttpEvent): string {
  const header = headerOf(event, 'authorization') ?? '';
  const found = /^Bearer ([A-Za-z0-9._~+/-]{1,512}=*)$/.exec(header);
  if (!found) throw new CscError('invalid_token', 'an access token (Authorization: Bearer) is required');
  return found[1];
}

/** The grant of the call's access token, read (not used), of one of `scopes`. */
export async function grantOfBearer(
  event: HttpEvent,
  deps: CscDoorDeps,
  scopes: readonly CscGrant['scope'][],
): Promise<CscGrant> {
  const read = await deps.store.getToken(bearerToken(event), seconds(deps));
  if (!read.ok) throw tokenRefusal(read);
  if (!scopes.includes(read.grant.scope)) {
    throw new CscError(
      'insufficient_scope',
      `this method needs an access token of scope ${scopes.join(' or ')}`,
    );
  }
  return read.grant;
}

export function tokenRefusal(use: Extract<TokenUse, { ok: false }>): CscError {
  const why = { unknown: 'unknown', used: 'already used', expired: 'expired' }[use.reason];
  return new CscError('invalid_token', `the access token is ${why}`);
}

/** client_secret_basic (RFC 6749 2.3.1, form-encoded id and secret) or client_secret_post. */
export function authenticateClient(
  event: HttpEvent,
  body: Record<string, unknown>,
  config: CscSettings,
): CscClient {
  const header = headerOf(event, 'authorization');
  let id: unknown = body.client_id;
  let secret: unknown = body.client_secret;
  if (header !== undefined) {
    const basic = /^Basic ([A-Za-z0-9+/]+=*)$/.exec(header);
    const decoded = basic ? Buffer.from(basic[1], 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new CscError('invalid_client', 'client authentication failed');
    try {
      id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    } catch {
      throw new CscError('invalid_client', 'client authentication failed');
    }
  }
  const client = config.clients.find((c) => c.clientId === id);
  if (!client || !clientSecretMatches(client, secret)) {
    throw new CscError('invalid_client', 'client authentication failed');
  }
  return client;
}
