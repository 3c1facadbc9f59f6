/**
 * The local IdP's registered clients (static; no dynamic registration). All are public clients
 * (token_endpoint_auth_method none, so PKCE is required) with one loopback redirect URI. As native
 * clients (RFC 8252 7.3) they may use it on any port: the scripted user agent stops at the redirect and
 * never connects to it, the demo e-service page and the browser test receive it on the port they have.
 */
export const LOOPBACK_REDIRECT_URI = 'http://127.0.0.1/callback';

export const CLIENT_IDS = {
  /** The signing service: its ID tokens carry the signer's identity. */
  signingService: 'signing-service',
  /** Same as signingService but ES256-signed ID tokens. */
  signingServiceEs256: 'signing-service-es256',
  /** Another relying party: its tokens must be refused by the signing service (wrong audience). */
  otherService: 'other-service',
} as const;

/**
 * The clients that may ask for signatures (the signature extension's sign scope), each with a key of its
 * own for the signed signRequest (scripts/local/client-keys.ts, IDP_CLIENT_KEYS_DIR).
 */
export const SIGNING_CLIENT_IDS: readonly string[] = [
  CLIENT_IDS.signingService,
  CLIENT_IDS.signingServiceEs256,
];

export interface IdpClientMetadata {
  readonly client_id: string;
  readonly client_name: string;
  readonly application_type: 'native';
  readonly token_endpoint_auth_method: 'none';
  readonly grant_types: readonly string[];
  readonly response_types: readonly string[];
  readonly redirect_uris: readonly string[];
  readonly id_token_signed_response_alg: 'RS256' | 'ES256';
  /** auth_time in every ID token, not only when max_age or prompt=login asks for it. */
  readonly require_auth_time: boolean;
}

function publicClient(clientId: string, clientName: string, alg: 'RS256' | 'ES256'): IdpClientMetadata {
  return {
    client_id: clientId,
    client_name: clientName,
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code'],
    response_types: ['code'],
    redirect_uris: [LOOPBACK_REDIRECT_URI],
    id_token_signed_response_alg: alg,
    require_auth_time: true,
  };
}

export const IDP_CLIENTS: readonly IdpClientMetadata[] = [
  publicClient(CLIENT_IDS.signingService, 'Signing service', 'RS256'),
  publicClient(CLIENT_IDS.signingServiceEs256, 'Signing service (ES256)', 'ES256'),
  publicClient(CLIENT_IDS.otherService, 'Another e-service', 'RS256'),
];
