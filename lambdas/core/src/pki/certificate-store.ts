/**
 * The issued-certificate store as the CA uses it: its port and records, owned here with the rest of the
 * domain so that the DynamoDB adapter implements it without importing the CA service. Beside the
 * certificates it keeps the CA's two registers, written in the same transaction as each certificate:
 * the identity assertions it certified for (each serves one request) and the public keys it certified
 * (each once, ever: a copy of a used pool key is refused).
 */
import { PipelineError } from '../shared/errors';

/** One issued certificate, kept for audit, revocation and idempotent retries. */
export interface IssuedCertificateRecord {
  readonly serialHex: string;
  readonly requestId: string;
  /** SHA-256 (hex) of the subject Name DER: links to the identity without storing it again in clear. */
  readonly subjectHash: string;
  /** SHA-256 (hex) of the certified SubjectPublicKeyInfo: decides whether a retry is the same key. */
  readonly publicKeyHash: string;
  /** SHA-256 (hex) of the identity assertion the subject was taken from. */
  readonly assertionHash?: string;
  readonly notBefore: number;
  readonly notAfter: number;
  readonly issuedAt: number;
  readonly certificatePem: string;
  readonly chainPem: readonly string[];
  /** The signer attempt the certificate was issued to (absent for callers that name none). */
  readonly attemptId?: string;
  /**
   * Epoch ms: when the certificate was released to its attempt, to be signed with: at issuance, in the
   * same transaction. The request gets no other certificate after it, but a takeover's replacement
   * (`supersedes`).
   */
  readonly releasedAt?: number;
  /**
   * Serial of the request's earlier certificate this one replaced, revoked `superseded` in the same
   * transaction (a takeover whose dead attempt's certificate signed nothing that left the service).
   */
  readonly supersedes?: string;
  /** How many certificates of the request this one follows (with `supersedes`; at most MAX_REPLACEMENTS). */
  readonly replacements?: number;
  /**
   * A one-time credential's certificate (its request created the credential): the one request it was
   * released to, by a second login (LoggedCertificateStore.recordActivation).
   */
  readonly activatedBy?: string;
}

/**
 * How long a one-time credential's certificate is valid: the two logins of a CSC client's flow (the
 * certificate, then the approval of the hashes built with it) take minutes.
 */
export const ONE_TIME_CREDENTIAL_VALIDITY_MS = 15 * 60_000;

/**
 * Replacements a request's certificate may have: each takeover whose dead attempt signed nothing gets
 * one, so a request survives as many crashes between certificate and signature as the sign queue has
 * redeliveries (five deliveries: four takeovers). A bound on certificates per approval, checked by the
 * CA's write and by the audit log's verification.
 */
export const MAX_REPLACEMENTS = 4;

/** The register entries a certificate is recorded with (see IssuedCertificateStore). */
export interface IssuanceRegisters {
  /** The assertion's replay key (VerifiedAssertion.replayKey) and until when it must be remembered. */
  readonly assertionKey: string;
  /** Epoch seconds: after this the CA refuses the assertion as stale anyway. */
  readonly assertionExpiresAt: number;
  /** Epoch seconds: longer than any pool key may live. */
  readonly publicKeyExpiresAt: number;
}

/** What the store already knows about one issuance (one read for a whole batch). */
export interface IssuanceState {
  /** The request's current certificate. */
  readonly existing?: IssuedCertificateRecord;
  /** The request (and attempt) an assertion was certified for. */
  readonly assertionUse?: { readonly requestId: string; readonly attemptId?: string };
  /** The request a public key was certified for. */
  readonly publicKeyUse?: { readonly requestId: string; readonly serialHex: string };
}

export interface IssuanceLookup {
  readonly requestId: string;
  readonly assertionKey: string;
  readonly publicKeyHash: string;
}

export type RecordIssuedResult =
  | { readonly stored: true }
  /** The request already has a certificate (a concurrent or earlier issuance): this one was not stored. */
  | { readonly stored: false; readonly existing: IssuedCertificateRecord }
  /** A register refused it (a concurrent use of the same assertion or key): nothing was stored. */
  | { readonly stored: false; readonly conflict: 'assertion-used' | 'public-key-certified' }
  /** A replacement whose earlier serial was revoked (or is gone) meanwhile: nothing was stored. */
  | { readonly stored: false; readonly conflict: 'previous-revoked' };

/** A serial as the CA's records have it: in force, revoked, or not on record. */
export type SerialState = 'valid' | 'revoked' | 'unknown';

/** An issued certificate with the register entries it is recorded with. */
export interface CertificateToRecord {
  readonly certificate: IssuedCertificateRecord;
  readonly registers: IssuanceRegisters;
}

/**
 * Issued certificates (one per request, serials never repeat) and the CA's registers, as the CA reads
 * them; it writes them with their audit events (LoggedCertificateStore).
 */
export interface IssuedCertificateStore {
  /** One strongly consistent read for many issuances; results in input order. */
  lookup(items: readonly IssuanceLookup[]): Promise<IssuanceState[]>;
  /** Whether a serial is in force, revoked or not on record (strongly consistent). */
  serialState?(serialHex: string): Promise<SerialState>;
}

/** `revokedBy` of the revocation a replacement makes: the CA's own, not an operator's or a client's. */
export const SUPERSEDED_BY_CA = 'ca';

/**
 * A fresh random serial was already in use (2^-128 odds unless the RNG is broken): never reused. The CA
 * refuses the request (a retry would not help), telling the client only that issuance failed.
 */
export class SerialCollisionError extends PipelineError {
  public override readonly name = 'SerialCollisionError';
  public constructor() {
    super('the certificate serial number is already in use', 'SERIAL_COLLISION', {
      clientCode: 'CERTIFICATE_ISSUE_FAILED',
    });
  }
}
