import { createHash, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import {
  PARAM_SIGN_REQUEST,
  SCOPE_SIGN,
  IdentityProviderUnavailableError,
  type SignMessage,
} from '@pipeline/core/identity';
import { fetchJson } from './sources';

/** The Swedish profile's scopes for names and the personal identity number. */
const LOGIN_SCOPE = 'openid profile https://id.oidc.se/scope/naturalPersonNumber';

export interface RelyingPartyOptions {
  readonly issuer: string;
  /** This service's client id at the provider (the ID token's audience the verifier requires). */
  readonly clientId: string;
  readonly redirectUri: string;
  /** The service's key registered at the provider: signs the signature extension's signRequest. */
  readonly signingKey: { readonly privateKey: KeyObject; readonly kid?: string; readonly alg: string };
}

/** What the citizen is asked to approve (oidc-sweden signature extension, signRequest). */
export interface SignatureToApprove {
  /** The digest to be signed (standard base64): `tbs_data`. */
  readonly tbsData: string;
  readonly signMessage: SignMessage;
}

interface ProviderMetadata {
  readonly authorization_endpoint: string;
  readonly token_endpoint: string;
}

/**
 * The service as an OpenID Connect relying party of the citizens' provider, for the CSC API: the
 * authorization request (code flow, PKCE S256, `prompt=login consent`, the caller's nonce; with a
 * signature, the oidc-sweden signature extension exactly as an e-service sends it: the sign scope and
 * the signRequest JWT signed with the service's registered key) and the code exchange. The ID token it
 * returns is not trusted here: the caller verifies it with the AssertionVerifier, as the API does.
 */
export class OidcRelyingParty {
  private metadata?: Promise<ProviderMetadata>;

  public constructor(private readonly options: RelyingPartyOptions) {}

  /** A PKCE verifier and its S256 challenge. */
  public static pkce(): { verifier: string; challenge: string } {
    const verifier = randomBytes(32).toString('base64url');
    return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
  }

  public async authorizationUrl(request: {
    readonly state: string;
    readonly nonce: string;
    readonly codeChallenge: string;
    readonly signature?: SignatureToApprove;
  }): Promise<string> {
    const { authorization_endpoint } = await this.discover();
    const url = new URL(authorization_endpoint);
    const params: Record<string, string> = {
      client_id: this.options.clientId,
      redirect_uri: this.options.redirectUri,
      response_type: 'code',
      scope: request.signature ? `${LOGIN_SCOPE} ${SCOPE_SIGN}` : LOGIN_SCOPE,
      prompt: 'login consent',
      nonce: request.nonce,
      state: request.state,
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
      ...(request.signature ? { [PARAM_SIGN_REQUEST]: await this.signRequest(request.signature) } : {}),
    };
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    return url.toString();
  }

  /** The authorization code grant (a public client with PKCE): the ID token, unverified. */
  public async exchangeCode(code: string, codeVerifier: string): Promise<string> {
    const { token_endpoint } = await this.discover();
    const response = await fetch(token_endpoint, {
      method: 'POST',
      redirect: 'error',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: this.options.redirectUri,
        client_id: this.options.clientId,
        code_verifier: codeVerifier,
      }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await response.json().catch(() => ({}))) as { id_token?: unknown };
    if (!response.ok || typeof body.id_token !== 'string') {
      throw new IdentityProviderUnavailableError(
        `the identity provider's token endpoint answered HTTP ${response.status} without an ID token`,
      );
    }
    return body.id_token;
  }

  /** The signRequest (extension 3.1.1.1): `tbs_data`, `sign_message`, signed by the service, short-lived. */
  private signRequest(signature: SignatureToApprove): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const { privateKey, kid, alg } = this.options.signingKey;
    return new SignJWT({
      tbs_data: signature.tbsData,
      sign_message: {
        message: Buffer.from(signature.signMessage.text, 'utf8').toString('base64'),
        mime_type: signature.signMessage.mimeType ?? 'text/plain',
      },
    })
      .setProtectedHeader({ alg, ...(kid ? { kid } : {}), typ: 'JWT' })
      .setIssuer(this.options.clientId)
      .setAudience(this.options.issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .setJti(randomUUID())
      .sign(privateKey);
  }

  private discover(): Promise<ProviderMetadata> {
    this.metadata ??= fetchJson(
      `${this.options.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
    ).then((doc) => {
      const m = doc as Partial<ProviderMetadata>;
      if (typeof m.authorization_endpoint !== 'string' || typeof m.token_endpoint !== 'string') {
        throw new Error('the discovery document names no authorization or token endpoint');
      }
      return m as ProviderMetadata;
    });
    // A failure is not kept: the next call reads again.
    this.metadata.catch(() => (this.metadata = undefined));
    return this.metadata;
  }
}
