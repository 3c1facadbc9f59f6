/**
 * The issued-certificate store as the CA uses it: its port and records, owned here with the rest of the
 * domain so that the DynamoDB adapter implements it without importing the CA service.
 */

/** One issued certificate, kept for audit, revocation and idempotent retries. */
export interface IssuedCertificateRecord {
  readonly serialHex: string;
  readonly requestId: string;
  /** SHA-256 (hex) of the subject Name DER: links to the identity without storing it again in clear. */
  readonly subjectHash: string;
  /** SHA-256 (hex) of the certified SubjectPublicKeyInfo: decides whether a retry is the same key. */
  readonly publicKeyHash: string;
  readonly notBefore: number;
  readonly notAfter: number;
  readonly issuedAt: number;
  readonly certificatePem: string;
  readonly chainPem: readonly string[];
  /** The signer attempt the certificate was issued to (absent for callers that name none). */
  readonly attemptId?: string;
  /** Serial of the certificate this one replaced (issued to an attempt that died before releasing it). */
  readonly supersedes?: string;
}

export type RecordIssuedResult =
  | { readonly stored: true }
  /** The request already has a certificate (a concurrent or earlier issuance): this one was not stored. */
  | { readonly stored: false; readonly existing: IssuedCertificateRecord };

/** Issued certificates: one per request, serials never repeat. */
export interface IssuedCertificateStore {
  getByRequest(requestId: string): Promise<IssuedCertificateRecord | undefined>;
  /** Many requests' certificates in one read; requests without one are missing from the map. */
  getManyByRequest?(requestIds: readonly string[]): Promise<ReadonlyMap<string, IssuedCertificateRecord>>;
  /**
   * Stores new certificates (none of whose requests has one yet) in as few transactions as possible.
   * Per item: stored, or not stored (`record` would have to decide: lost race, serial collision, or a
   * write whose outcome is unknown); never a partial certificate.
   */
  recordMany?(certificates: readonly IssuedCertificateRecord[]): Promise<boolean[]>;
  /** Stores atomically; throws SerialCollisionError if the serial was ever used. */
  record(certificate: IssuedCertificateRecord): Promise<RecordIssuedResult>;
  /**
   * Replaces the request's certificate `previous` (never released: its attempt died) with `certificate`,
   * atomically and only if `previous` is still the request's certificate; marks the old serial superseded
   * (for revocation). A lost race returns the certificate that won.
   */
  replace(
    previous: IssuedCertificateRecord,
    certificate: IssuedCertificateRecord,
  ): Promise<RecordIssuedResult>;
}

/** A fresh random serial was already in use (2^-128 odds unless the RNG is broken): never reused. */
export class SerialCollisionError extends Error {
  public override readonly name = 'SerialCollisionError';
  public readonly code = 'SERIAL_COLLISION';
  public constructor() {
    super('the certificate serial number is already in use');
  }
}
