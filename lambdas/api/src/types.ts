import type { AdmissionDecision, PoolStatus } from '@pipeline/core/pool';
import type {
  AdesProfile,
  DigestAlgorithm,
  KeyType,
  SignatureAlgorithm,
  SignatureFormat,
} from '@pipeline/core/shared';
import type {
  AssertionReplayStore,
  AssertionVerifier,
  CredentialUse,
  SignMessage,
} from '@pipeline/core/identity';
import type {
  CertificateRevoker,
  RequestQueue,
  RequestStore,
  SignDocument,
  SignatureLevel,
} from '@pipeline/core/signing';

/**
 * A validated sign request as the API accepted it (defaults applied). A request with `documents` has as
 * its digest the manifest's (manifestHash in standard base64, SHA-256) and no format, profile or levels.
 */
export interface SignRequestInput {
  readonly requestId: string;
  readonly digest: string;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** Absent with `documents` (each document has its own). */
  readonly format?: SignatureFormat;
  /** Several documents in place of the single document's fields, each resolved, in input order. */
  readonly documents?: readonly SignDocument[];
  /** For `cms`: the AdES profile (default CAdES-B-B). */
  readonly profile?: AdesProfile;
  /** For `cms`: the level asked for (default B-LT) and the lowest accepted (default the level). */
  readonly level?: SignatureLevel;
  readonly minimumLevel?: SignatureLevel;
  /** The ID token, or a trusted client's request object, that names the signer. */
  readonly identityAssertion: string;
  /**
   * The e-service's sign message (only its hash is kept once the request ends). With `documents`, the
   * citizen approves it composed with the list of the documents (composeSignMessage): `approvedMessage`.
   */
  readonly signMessage?: SignMessage;
  /** The message the citizen approves: signMessage, or with `documents` its composition. */
  readonly approvedMessage?: SignMessage;
  /**
   * The login approved the digests in any format (AssertionBinding.formatOpen): set by a door whose
   * client names the format after the login (CSC signDoc), never from the API's wire format.
   */
  readonly formatOpen?: boolean;
  /**
   * The request's part in a one-time credential (SignRequestRecord.credential): set by a door (CSC), never
   * from the API's wire format.
   */
  readonly credential?: CredentialUse;
}

/**
 * Who vouches for the signer: an identity provider's ID token, or a request object signed with the
 * calling client's registered key (the verifier knows which clients are registered).
 */
export interface IdentitySettings {
  readonly verifier: AssertionVerifier;
  readonly assertions: AssertionReplayStore;
}

export interface ApiSettings {
  /** Largest accepted body in bytes (413 above). */
  readonly maxBodyBytes: number;
  /** Record retention (seconds) for the TTL attribute. */
  readonly retentionSeconds: number;
  /** When the pool policy is `reject`, refuse new requests of an empty key type with 429 up front. */
  readonly rejectWhenPoolEmpty: boolean;
  /** Retry-After of a refusal for want of keys (POOL_RETRY_AFTER_SECONDS). */
  readonly retryAfterSeconds: number;
  /**
   * On AWS, API key id -> the IAM principal that may use it: a request whose key is not its caller's is
   * refused (FORBIDDEN), so no client spends another's quota. Absent where the key is the only credential.
   */
  readonly apiKeyPrincipals?: ReadonlyMap<string, string>;
}

/** Whether one more sign request of a key type is accepted, by key supply and the client's share. */
export interface Admission {
  /** The decision; an accepted request is counted until `cancel` (it was not accepted after all). */
  decide(
    keyType: KeyType,
    clientId: string,
    /** The request's weight (core requestWeight). */
    weight: number,
  ): Promise<{ readonly decision: AdmissionDecision; readonly cancel: () => void }>;
}

/** Word of requests that ended, for the waits of GET and of POST with `wait` (see RequestEndingSignals). */
export interface RequestEndings {
  /** Where the words stand now: taken before a read, it makes the words that read may have missed newer. */
  mark(): number;
  /**
   * Resolves true once the request is said to have ended after the mark `since` (at once if it was said
   * already), false after `ms` without word.
   */
  wait(id: string, ms: number, since: number): Promise<boolean>;
}

export interface ApiDeps {
  readonly requests: RequestStore;
  readonly queue: RequestQueue;
  readonly pool: PoolStatus;
  /**
   * Admission by key supply and per-client share (see SignRequestAdmission); without it only the
   * `reject` policy's empty pool is refused (settings.rejectWhenPoolEmpty).
   */
  readonly admission?: Admission;
  readonly settings: ApiSettings;
  readonly identity: IdentitySettings;
  /**
   * The CA's revocation function: registers each new request id to its client, and revokes a signed
   * request's certificate. Without it requests are not registered and revocation answers 503.
   */
  readonly revoker?: CertificateRevoker;
  readonly now?: () => number;
  /**
   * Whether the service has finished starting (the local runner: tables made, the pool's initial fill and
   * the warm-up done); until then health answers 503 `starting`. Absent: ready.
   */
  readonly ready?: () => boolean;
  /** Told of every refused identity assertion (code only: the token and its claims are never passed). */
  readonly onAssertionRefused?: (code: string, context: { clientId: string; requestId?: string }) => void;
  /** Records demand per key type (forecast input); failures never fail the request. */
  readonly recordDemand?: (keyType: KeyType, at: number) => Promise<void>;
  /**
   * Word of ended requests from the signers (the local runner: its consumer processes): a waiting client
   * then costs one read when its request ends instead of a poll. Absent: the waits poll.
   */
  readonly endings?: RequestEndings;
}
