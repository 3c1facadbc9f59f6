import type { CscAuthorizationRequest, CscScope, CscSigning } from './authorization';

/**
 * The state of a CSC authorization through its steps, each kept in the CSC table under the hash of
 * its secret (the service never stores a code, an access token or a state, only their SHA-256) and
 * sealed under a key derived from that secret (sealing.ts), so that only its holder can use it; each
 * taken once:
 *
 * - a **flow** (oauth2/authorize -> the identity provider -> the callback): the accepted request, the
 *   service's own PKCE verifier towards the provider and the nonce the login must carry;
 * - a **code** (the callback -> oauth2/token): the grant, redeemed once, by its client only;
 * - an **access token** (oauth2/token -> credentials/*, signatures/signHash): the grant; a credential
 *   token is the signature activation data and is used once, by a conditional write.
 */
export interface CscFlow {
  /** The OAuth state towards the identity provider: random, the flow's key. */
  readonly id: string;
  /**
   * The client's authorization parameters as checked (flowParams): the request is parsed from them again
   * at the callback (requestOfFlow), so that nothing derived or repeated waits in the table for a login
   * that may never come.
   */
  readonly params: Readonly<Record<string, string>>;
  /**
   * The id of the sign request (a credential authorization) or of the credential's creation (a service
   * authorization), chosen at authorization: the login's nonce binds it.
   */
  readonly requestId: string;
  /** PKCE verifier of the service's own authorization request to the identity provider. */
  readonly idpCodeVerifier: string;
  /** Epoch seconds. */
  readonly expiresAt: number;
}

export interface CscGrant {
  readonly clientId: string;
  readonly scope: CscScope;
  readonly signing?: CscSigning;
  /** A service grant: the id of the one-time credential its login created (`<type>.<request id>`). */
  readonly createdCredential?: string;
  /** The citizen's verified ID token, for credential grants: the sign request's identity assertion. */
  readonly idToken?: string;
  /** Epoch seconds. */
  readonly expiresAt: number;
}

export interface CscCode extends CscGrant {
  readonly redirectUri: string;
  /** Whether the authorization request named the redirect URI (oauth2/token then requires it). */
  readonly redirectUriSent: boolean;
  readonly codeChallenge: string;
}

export type TokenUse =
  | { readonly ok: true; readonly grant: CscGrant }
  | { readonly ok: false; readonly reason: 'unknown' | 'used' | 'expired' };

/**
 * A pushed authorization request (oauth2/pushed_authorize, RFC 9126): the authenticated client's
 * parameters, kept under the hash of the `request_uri` it was given, until oauth2/authorize takes them once.
 */
export interface CscPushedRequest {
  readonly clientId: string;
  readonly params: Readonly<Record<string, string>>;
  /** Epoch seconds. */
  readonly expiresAt: number;
}

/**
 * A signature requested in operation mode A: the pipeline's sign request it became and what the answer
 * holds, sealed under the responseID and the access token that asked (signatures/signPolling presents
 * both), until `expiresAt` (CSC validity_period).
 */
export interface CscPendingResponse {
  readonly clientId: string;
  readonly requestId: string;
  readonly method: 'signHash' | 'signDoc';
  readonly count: number;
  readonly returnValidationInfo: boolean;
  /** Epoch seconds. */
  readonly expiresAt: number;
}

/**
 * The CSC table (adapters/dynamodb CscRepository). Each method takes the secret itself (a code, an
 * access token, a state, a responseID): the table keys items by its hash and seals what they hold under
 * it, so an item written or edited by someone without the secret does not open (it reads as unknown).
 */
export interface CscStore {
  putResponse(responseID: string, accessToken: string, response: CscPendingResponse): Promise<void>;
  /** Reads an asynchronous signature's state (any number of times until it expires), for that token only. */
  getResponse(
    responseID: string,
    accessToken: string,
    nowSeconds: number,
  ): Promise<CscPendingResponse | undefined>;
  putPushed(uriHash: string, pushed: CscPushedRequest): Promise<void>;
  /** Removes and returns the pushed request if it is this client's and not expired (once). */
  takePushed(uriHash: string, clientId: string, nowSeconds: number): Promise<CscPushedRequest | undefined>;
  putFlow(flow: CscFlow): Promise<void>;
  /** Removes and returns the flow (once), or undefined when unknown, taken, expired or not sealed by it. */
  takeFlow(id: string, nowSeconds: number): Promise<CscFlow | undefined>;
  putCode(code: string, grant: CscCode): Promise<void>;
  /**
   * Removes and returns the code if it is this client's and not expired: a code another client presents
   * stays for its own client (`other-client`).
   */
  redeemCode(
    code: string,
    clientId: string,
    nowSeconds: number,
  ): Promise<CscCode | 'other-client' | undefined>;
  putToken(accessToken: string, grant: CscGrant): Promise<void>;
  /** Reads a token without using it (service tokens; a credential token's checks before its use). */
  getToken(accessToken: string, nowSeconds: number): Promise<TokenUse>;
  /** Uses a credential token once: marks it used (and forgets the grant) unless used or expired. */
  useToken(accessToken: string, nowSeconds: number): Promise<TokenUse>;
}

/** How long each step lives: a login takes minutes, a code is redeemed at once, the token is short-lived. */
export interface CscLifetimes {
  readonly flowSeconds: number;
  readonly codeSeconds: number;
  readonly accessTokenSeconds: number;
}

export function grantOf(
  request: CscAuthorizationRequest,
  idToken: string | undefined,
  expiresAt: number,
): CscCode {
  return {
    clientId: request.clientId,
    scope: request.scope,
    redirectUri: request.redirectUri,
    redirectUriSent: request.redirectUriSent,
    codeChallenge: request.codeChallenge,
    ...(request.signing ? { signing: request.signing } : {}),
    ...(request.creation ? { createdCredential: request.creation.credentialID } : {}),
    ...(idToken === undefined ? {} : { idToken }),
    expiresAt,
  };
}
