import type { AuditReceipt } from '../audit';
import type { DigestAlgorithm, KeyType, SignatureAlgorithm } from '../shared/algorithms';
import type { CredentialUse } from '../identity/binding';
import type { IdentityEvidence, SignerIdentity } from '../identity/types';
import type { SignMessage } from '../identity/sign-message';
import type { AdesProfile, SignatureFormat, SignatureLevel } from '../shared/formats';
import type { SignDocument } from './documents';

/**
 * The record of one sign request (docs/architecture.md, "Data" and "One request"), shared by the API, the
 * signer, the CA and the benchmarks. Timestamps are epoch milliseconds.
 */
/** A request id: a lower-case UUID (the API lower-cases client ids; openapi.json's `Id` is the same). */
export const REQUEST_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type RequestStatus = 'received' | 'signing' | 'signed' | 'failed';

/** Validation data of a B-LT result, DER in base64: what the CMS (CAdES) or the PDF's DSS (PAdES) carries. */
export interface StoredValidationData {
  readonly certificates: readonly string[];
  readonly ocspResponses: readonly string[];
  readonly crls: readonly string[];
}

/**
 * One document's signature in a signed request with `documents`. Stored in an item of its own (50 B-LT
 * results do not fit in one 400 KB item); the store's `get` assembles them, in input order, into
 * `documentResults` of a signed record.
 */
export interface DocumentResult {
  /** The document's position in the request's documents. */
  readonly index: number;
  /** Base64: the signature over the document's digest (`raw`) ... */
  readonly signature?: string;
  /** ... or the CMS container (`cms`), with its level and, from B-LT, its validation data. */
  readonly cms?: string;
  /** `dss-task`: the ToBeSignedBytes and XAdES object as signed (updated for BES/EPES), base64. */
  readonly toBeSignedBytes?: string;
  readonly adesObject?: string;
  readonly reachedLevel?: SignatureLevel;
  readonly validationData?: StoredValidationData;
}

/**
 * A one-time credential's key after its certificate was issued: the pool key as claimed (wrapped by the
 * HSM's key, useless outside it), kept on the creating request until the one signature a second login
 * approves. Binary fields in base64.
 */
export interface ReservedKey {
  readonly keyId: string;
  readonly wrappedKey: string;
  readonly publicKeySpki: string;
  readonly wrapKeyLabel: string;
  readonly hsmProfile: string;
  /** Epoch ms: its certificate's notAfter; the key serves no request at or after it. */
  readonly usableUntil: number;
}

export interface RequestError {
  /** Machine-readable, e.g. POOL_EMPTY, CSR_SIGNATURE_INVALID, HSM_ERROR. */
  readonly code: string;
  /** Human message without personal data or secrets. */
  readonly message: string;
}

/** The stages of a signing attempt whose durations a finished request records. */
export type SigningStage =
  | 'claim'
  | 'unwrap'
  | 'keygen'
  | 'sign'
  | 'csr'
  | 'destroy'
  | 'issue'
  | 'container'
  | 'timestamp'
  | 'validation'
  | 'audit';

/**
 * Milliseconds per stage of the attempt that finished the request (summed over retries and discarded
 * keys), for the benchmarks' "where the time goes". `audit` runs while `issue` does: it overlaps.
 */
export type StageDurations = Readonly<Partial<Record<SigningStage, number>>>;

export interface SignRequestRecord {
  readonly id: string;
  /** The e-service client that made the request (API key / IAM principal). */
  readonly clientId: string;
  readonly status: RequestStatus;
  /**
   * Base64 digest to be signed (the toBeSigned of the study). For a request with `documents`: the
   * manifest's SHA-256 (manifestHash in standard base64, digestAlgorithm SHA-256), which nothing signs.
   */
  readonly digest: string;
  readonly digestAlgorithm: DigestAlgorithm;
  /**
   * A request for several documents (in place of digest, format, profile and levels): each as the API
   * resolved it, in input order. Bound by the manifest (identity/binding.ts); its results are stored apart.
   */
  readonly documents?: readonly SignDocument[];
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** Absent on records made before containers existed: `raw`. */
  readonly format?: SignatureFormat;
  /** For `cms`: the AdES profile of the container. */
  readonly profile?: AdesProfile;
  /** For `cms`: the level asked for, and the lowest the client accepts when a TSA or responder is down. */
  readonly level?: SignatureLevel;
  readonly minimumLevel?: SignatureLevel;
  /** For a signed `cms`: the level the result reached. */
  readonly reachedLevel?: SignatureLevel;
  /** For a `cms` result at B-LT or above: its validation data (also inside a CAdES container). */
  readonly validationData?: StoredValidationData;
  /**
   * The certificate subject as the API read it from the verified assertion (for the CSR and the view);
   * the CA takes the subject from the assertion itself and refuses a CSR that names anyone else.
   */
  readonly signer: SignerIdentity;
  /** Who vouched for `signer` (issuer, subject and assertion hash). */
  readonly identity?: IdentityEvidence;
  /**
   * The evidence itself (the compact ID token or request object) while the request is open: the CA
   * verifies it again before it certifies. Every terminal transition removes it.
   */
  readonly identityAssertion?: string;
  /**
   * When the request has a sign message: its hash (signMessageHash). Part of the binding the identity
   * assertion carries and of the CA's audit event.
   */
  readonly signMessageHash?: string;
  /** The login approved the digests in any format (a CSC client's, chosen at signing): AssertionBinding. */
  readonly formatOpen?: boolean;
  /**
   * The request creates a one-time credential (`create`: a key certified and kept wrapped, nothing signed)
   * or signs with one (`use`: the creating request's id): docs/csc.md.
   */
  readonly credential?: CredentialUse;
  /** A created credential's key, wrapped, until its one use (removed by it). */
  readonly reservedKey?: ReservedKey;
  /**
   * The sign message itself while the request is open: the CA checks it by the same rules as the API and
   * hashes it itself. Every terminal transition removes it; it is never logged, audited or shown.
   */
  readonly signMessage?: SignMessage;
  /** SHA-256 of the canonical submitted input: a re-sent requestId with another body is a conflict. */
  readonly inputHash?: string;
  /** What the request weighs in admission (pool requestWeight) when more than 1; absent: 1. */
  readonly admissionWeight?: number;
  readonly receivedAt: number;
  readonly startedAt?: number;
  readonly keyAcquiredAt?: number;
  readonly finishedAt?: number;
  readonly stageMs?: StageDurations;
  /** Pool keys this request threw away as unusable before one served (audit-logged by id). */
  readonly discardedKeys?: number;
  /** A signed request with `documents`: each document's result, in input order (assembled on read). */
  readonly documentResults?: readonly DocumentResult[];
  /** Base64 signature (`raw`). */
  readonly signature?: string;
  /** Base64 DER of the CMS ContentInfo (`cms`). */
  readonly cms?: string;
  /** PEM leaf certificate. */
  readonly certificate?: string;
  /** Serial of the leaf certificate, lower-case hex (revocation, audit). */
  readonly certificateSerial?: string;
  /** Proof that the signature's audit event is in the audit log (signed requests with an audit log). */
  readonly receipt?: AuditReceipt;
  /** PEM chain: issuing CA, then root. */
  readonly chain?: readonly string[];
  /** Whether a pre-generated pool key was used (false: generated on the fly). */
  readonly pooledKey?: boolean;
  readonly error?: RequestError;
  /** TTL attribute (epoch seconds): retention of the record. */
  readonly expiresAt: number;
}
