/** The natural person the certificate is issued to; validated by the API and again by the CA. */
export interface SignerIdentity {
  readonly commonName: string;
  readonly givenName: string;
  readonly surname: string;
  /** Personal identity number (X.520 serialNumber). */
  readonly serialNumber: string;
  /** ISO 3166-1 alpha-2 country code. */
  readonly country: string;
}

/** The subject attributes of a signer's certificate (certificate-profile.ts). */
export type SubjectField = 'country' | 'surname' | 'givenName' | 'serialNumber' | 'commonName';

/** One subject attribute and the assertion attribute it came from (a `<saci:AttributeMapping>`). */
export interface AttributeSource {
  /** The subject attribute (Type `rdn`, Ref its OID). */
  readonly field: SubjectField;
  /** The assertion attribute's name (the SAML attribute name of the claim, see auth-context.ts). */
  readonly name: string;
  readonly friendlyName?: string;
  /** The value as the assertion carried it. */
  readonly value: string;
}

/** What the Authentication Context extension (RFC 7773, auth-context.ts) states: all of it from the verified assertion and the verifier's own audience. */
export interface AuthenticationContext {
  /** The identity provider (`iss` of the ID token), or the client that vouched (`iss` of its request object). */
  readonly identityProvider: string;
  /** Epoch ms: `auth_time` of the ID token (the request object's `iat`). */
  readonly authenticationInstant: number;
  /** `acr` of the ID token (CLIENT_VOUCHED_AUTHN_CONTEXT for a request object). */
  readonly authnContextClassRef: string;
  /** SHA-256 (hex) of the compact assertion: the `assertionHash` of the audit log's events. */
  readonly assertionRef: string;
  /** This service: the audience the assertion was issued to. */
  readonly serviceId: string;
  readonly attributes: readonly AttributeSource[];
}

/** What an assertion must attest for a request with a sign message. */
export interface ExpectedApproval {
  /** The request's digest (standard base64), sent to the identity provider as `tbs_data`. */
  readonly tbsData: string;
  readonly signMessageHash: string;
}

/** Where the identity of a request's signer came from (kept on the record for the CA and the audit). */
export type IdentityEvidence =
  | {
      readonly source: 'assertion';
      /** The identity provider (`iss`) and its subject identifier (`sub`) for the citizen. */
      readonly issuer: string;
      readonly subject: string;
      /** SHA-256 (hex) of the compact ID token; the token itself is never stored. */
      readonly assertionHash: string;
      /** Level of assurance (`acr`) and time of authentication (epoch ms). */
      readonly acr: string;
      readonly authTime: number;
    }
  /**
   * A trusted e-service vouched for the person in a request object signed with its registered key
   * (IDENTITY_CLIENT_KEYS).
   */
  | {
      readonly source: 'trusted-client';
      /** The client whose key signed the request object (its `iss`). */
      readonly client: string;
      /** SHA-256 (hex) of the compact request object. */
      readonly assertionHash: string;
    };

/** What a verified identity assertion yields. */
export interface VerifiedAssertion {
  readonly signer: SignerIdentity;
  readonly evidence: IdentityEvidence;
  /**
   * The assertion's replay key: SHA-256 (hex) over issuer, subject, nonce and issue time. Claims, not the
   * token's bytes: an ECDSA signature can be re-encoded (s -> n - s) into another valid token string.
   */
  readonly replayKey: string;
  /** Epoch ms after which the assertion is refused anyway (`exp`): how long its replay entry must live. */
  readonly expiresAt: number;
  /** Epoch ms: `iat`. */
  readonly issuedAt: number;
  /**
   * How the signer was authenticated, from the verified assertion only: what the certificate's
   * Authentication Context extension (RFC 7773) states.
   */
  readonly authContext: AuthenticationContext;
}

/** How a verifier judges time, and what else the assertion must attest. */
export interface VerifyOptions {
  /**
   * The CA's rule: the assertion's `iat` and `auth_time` no older than this (its own bound on how long a
   * request may wait in the queue), instead of the token's `exp` and the API's login age, since a token
   * the API accepted may expire while its request waits.
   */
  readonly maxAgeSeconds?: number;
  /**
   * For a request with a sign message (expectedApproval): an ID token must carry a sign approval from its
   * issuer for this message and digest (approval.ts). A request object needs none: its client, the
   * identity provider of its users, signs the nonce that binds the message's hash.
   */
  readonly approval?: ExpectedApproval;
}

/**
 * Verifies the evidence of who signs, bound to one sign request (implemented by adapters/oidc): an OpenID
 * Connect ID token from a trusted identity provider, or a request object signed with a registered
 * client's key. The API and the CA both use it; the CA's decision is the one certificates rest on.
 */
export interface AssertionVerifier {
  /**
   * Throws AssertionError with its code when the token is not a valid, trusted assertion whose `nonce`
   * equals `expectedNonce` (see assertionNonce), or IdentityProviderUnavailableError when the issuer's
   * keys cannot be read.
   */
  verify(token: string, expectedNonce: string, options?: VerifyOptions): Promise<VerifiedAssertion>;
}

/**
 * Single use of identity assertions: the first request that presents one claims it until it expires.
 * Presenting it again is accepted only for the same request by the same client (an idempotent resend).
 */
export interface AssertionReplayStore {
  /** True when the assertion is fresh or already claimed by this request and client; false: a replay. */
  claim(
    replayKey: string,
    use: { readonly requestId: string; readonly clientId: string; readonly expiresAt: number },
  ): Promise<boolean>;
}

/** The checks on an assertion's claims, from configuration. */
export interface AssertionPolicy {
  /** This service's client id: the required `aud` (and `azp` when `aud` names several). */
  readonly audience: string;
  /** Tolerance for the issuer's clock on exp, nbf, iat and auth_time. */
  readonly clockSkewSeconds: number;
  /** The citizen must have authenticated at most this long ago (`auth_time`). */
  readonly maxAuthAgeSeconds: number;
  /** Accepted levels of assurance (`acr`): any other value, or none, is refused. */
  readonly acceptedAcr: readonly string[];
  /** Longest accepted lifetime (exp - iat): a long-lived token is not a fresh login. */
  readonly maxLifetimeSeconds: number;
  /**
   * Longest accepted time between the login and the token (`iat - auth_time`): a token minted from an
   * existing session at the identity provider (prompt=none) is not an authentication for this signature.
   */
  readonly maxAuthGapSeconds: number;
}

/** Where each identity value comes from among the claims. */
export interface ClaimMapping {
  readonly givenName: string;
  readonly surname: string;
  /** Display name; when absent from the token, "<given name> <surname>". */
  readonly commonName: string;
  /** The personal identity number, which becomes the subject's serialNumber. */
  readonly serialNumber: string;
  /** Prepended to the number, e.g. "PNOSE-" for the ETSI EN 319 412-1 semantics form; "" keeps it as is. */
  readonly serialNumberPrefix: string;
  /** The country: from a claim, or a fixed value for an identity provider of one country. */
  readonly country: { readonly claim: string } | { readonly value: string };
}
