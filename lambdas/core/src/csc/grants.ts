import type { CscAuthorizationRequest, CscScope, CscSigning } from './authorization';

/**
 * The state of a CSC authorization through its steps, each kept in the CSC table under the hash of
 * its secret (the service never stores a code or an access token, only their SHA-256), each taken once:
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
  readonly request: CscAuthorizationRequest;
  /** PKCE verifier of the service's own authorization request to the identity provider. */
  readonly idpCodeVerifier: string;
  readonly nonce: string;
  /** Epoch seconds. */
  readonly expiresAt: number;
}

export interface CscGrant {
  readonly clientId: string;
  readonly scope: CscScope;
  readonly signing?: CscSigning;
  /** The citizen's verified ID token, for credential grants: the sign request's identity assertion. */
  readonly idToken?: string;
  /** Epoch seconds. */
  readonly expiresAt: number;
}

export interface CscCode extends CscGrant {
  readonly redirectUri: string;
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
 * A signature requested in operation mode A: the pipeline's sign request it became, what the answer
 * holds, and the access token that asked (signatures/signPolling presents it again), until `expiresAt`
 * (CSC validity_period).
 */
export interface CscPendingResponse {
  readonly clientId: string;
  readonly tokenHash: string;
  readonly requestId: string;
  readonly method: 'signHash' | 'signDoc';
  readonly count: number;
  readonly returnValidationInfo: boolean;
  /** Epoch seconds. */
  readonly expiresAt: number;
}

/** The CSC table (adapters/dynamodb CscRepository). Keys are SHA-256 hashes of the secrets. */
export interface CscStore {
  putResponse(responseHash: string, response: CscPendingResponse): Promise<void>;
  /** Reads an asynchronous signature's state (any number of times until it expires). */
  getResponse(responseHash: string, nowSeconds: number): Promise<CscPendingResponse | undefined>;
  putPushed(uriHash: string, pushed: CscPushedRequest): Promise<void>;
  /** Removes and returns the pushed request if it is this client's and not expired (once). */
  takePushed(uriHash: string, clientId: string, nowSeconds: number): Promise<CscPushedRequest | undefined>;
  putFlow(flow: CscFlow): Promise<void>;
  /** Removes and returns the flow (once), or undefined when unknown, taken or expired. */
  takeFlow(id: string, nowSeconds: number): Promise<CscFlow | undefined>;
  putCode(codeHash: string, code: CscCode): Promise<void>;
  /**
   * Removes and returns the code if it is this client's and not expired: a code another client presents
   * stays for its own client (`other-client`).
   */
  redeemCode(
    codeHash: string,
    clientId: string,
    nowSeconds: number,
  ): Promise<CscCode | 'other-client' | undefined>;
  putToken(tokenHash: string, grant: CscGrant): Promise<void>;
  /** Reads a token without using it (service tokens; a credential token's checks before its use). */
  getToken(tokenHash: string, nowSeconds: number): Promise<TokenUse>;
  /** Uses a credential token once: marks it used (and forgets the ID token) unless used or expired. */
  useToken(tokenHash: string, nowSeconds: number): Promise<TokenUse>;
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
    codeChallenge: request.codeChallenge,
    ...(request.signing ? { signing: request.signing } : {}),
    ...(idToken === undefined ? {} : { idToken }),
    expiresAt,
  };
}
