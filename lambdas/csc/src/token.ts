import { grantedAuthorizationDetails, pkceMatches, type CscGrant } from '@pipeline/core/csc';
import { json, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { CscError } from './errors';
import { authenticateClient, parseBody, randomSecret, seconds } from './request';
import type { CscDoorDeps } from './types';

/**
 * oauth2/token (authorization_code): the client authenticates (client_secret_basic or
 * client_secret_post), the code is redeemed once by its own client, the PKCE verifier must match; the
 * access token (for a credential: the signature activation data) is stored by its hash.
 */
export async function token(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  const body = parseBody(event);
  const client = authenticateClient(event, body, deps.config);
  if (body.grant_type !== 'authorization_code') {
    throw new CscError('unsupported_grant_type', 'grant_type must be authorization_code');
  }
  if (typeof body.code !== 'string' || body.code.length > 256) {
    throw new CscError('invalid_request', 'code is required');
  }
  const redeemed = await deps.store.redeemCode(body.code, client.clientId, seconds(deps));
  if (redeemed === undefined || redeemed === 'other-client') {
    throw new CscError('invalid_grant', 'the code is unknown, used, expired or was issued to another client');
  }
  // RFC 6749 4.1.3: required when the authorization request had it (the service keeps it only then).
  const sentAtAuthorize = redeemed.redirectUriSent;
  if ((body.redirect_uri !== undefined || sentAtAuthorize) && body.redirect_uri !== redeemed.redirectUri) {
    throw new CscError('invalid_grant', 'redirect_uri differs from the authorization request');
  }
  if (!pkceMatches(body.code_verifier, redeemed.codeChallenge)) {
    throw new CscError('invalid_grant', 'the PKCE code_verifier does not match the code_challenge');
  }
  const accessToken = randomSecret();
  const ttl = deps.config.lifetimes.accessTokenSeconds;
  const { redirectUri: _r, codeChallenge: _c, redirectUriSent: _s, ...rest } = redeemed;
  const grant: CscGrant = { ...rest, expiresAt: seconds(deps) + ttl };
  await deps.store.putToken(accessToken, grant);
  return json(
    200,
    {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: ttl,
      scope: grant.scope,
      ...(grant.signing
        ? {
            credentialID: grant.signing.credentialID,
            authorization_details: grantedAuthorizationDetails(grant.signing),
          }
        : {}),
    },
    { 'Cache-Control': 'no-store' },
  );
}
