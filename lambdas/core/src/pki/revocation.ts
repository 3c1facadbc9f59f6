/**
 * RFC 5280 5.3.1 reason codes a revocation may carry (removeFromCRL is for delta CRLs, which this CA does
 * not issue; certificateHold is not offered: a one-time certificate is never suspended and resumed).
 */
export const REVOCATION_REASONS = [
  'unspecified',
  'keyCompromise',
  'cACompromise',
  'affiliationChanged',
  'superseded',
  'cessationOfOperation',
  'privilegeWithdrawn',
] as const;
export type RevocationReason = (typeof REVOCATION_REASONS)[number];

export function isRevocationReason(value: unknown): value is RevocationReason {
  return typeof value === 'string' && (REVOCATION_REASONS as readonly string[]).includes(value);
}

/** One revoked certificate as a CRL entry or an OCSP answer needs it. */
export interface RevokedEntry {
  /** Lower-case hex, as issued. */
  readonly serialHex: string;
  readonly revokedAt: Date;
  readonly reason: RevocationReason;
}

/** Who revoked a certificate, when and why (kept on the certificate's serial record). */
export interface Revocation {
  /** Epoch ms. */
  readonly revokedAt: number;
  readonly reason: RevocationReason;
  /** `operator`, the API client that asked, or `ca` for a certificate a takeover superseded. */
  readonly revokedBy: string;
}

/** What the CRL and OCSP paths know of a serial this CA issued. */
export interface CertificateStatus {
  readonly serialHex: string;
  readonly requestId: string;
  /** Epoch ms. */
  readonly notAfter: number;
  readonly revocation?: Revocation;
}

/** What the store answers to a revocation (the audit's receipt is added by who audits it: RevokeOutcome). */
export type StoredRevokeOutcome =
  | { readonly outcome: 'revoked'; readonly status: CertificateStatus }
  | { readonly outcome: 'already-revoked'; readonly status: CertificateStatus }
  | { readonly outcome: 'unknown' };

/** What the CA recorded of one request: its current certificate's serial and the client it belongs to. */
export interface RequestCertificate {
  readonly serialHex?: string;
  /** The API client the request id was registered to (registerOwner). */
  readonly owner?: string;
  /** A one-time credential's certificate: the request it was released to, if any. */
  readonly activatedBy?: string;
}

/** The certificate records as revocation sees them (implemented by the DynamoDB certificate repository). */
export interface RevocationStore {
  /**
   * Records the request id as the client's, before the request is stored: the first client keeps it
   * (false for anyone else), until `expiresAt` (epoch seconds: after its certificate would have expired).
   */
  registerOwner(requestId: string, clientId: string, expiresAt: number): Promise<boolean>;
  /** The request's certificate and owner as the CA recorded them, read strongly consistently. */
  requestCertificate(requestId: string): Promise<RequestCertificate>;
  /** Statuses of the given serials (absent: never issued by this CA), read strongly consistently. */
  statuses(serialHexes: readonly string[]): Promise<Map<string, CertificateStatus>>;
  /** Marks a serial revoked once; a second revocation keeps the first one's time and reason. */
  revoke(serialHex: string, revocation: Revocation): Promise<StoredRevokeOutcome>;
  /** Revoked certificates that had not expired at `at` (epoch ms): the entries of a full CRL. */
  revokedUnexpired(at: number): Promise<RevokedEntry[]>;
  /** The next CRL number of an issuer (monotonic, never reused). */
  nextCrlNumber(issuer: 'root' | 'issuing'): Promise<number>;
}

/**
 * A serial as people write it (hex, any case, optional colons or 0x) in this CA's form: the bytes of the
 * positive integer without leading zero octets, as lower-case hex (so a serial whose first octet is below
 * 0x10 keeps its leading zero digit). Undefined when it is not a serial.
 */
export function normalizeSerial(input: string): string | undefined {
  let hex = input.trim().toLowerCase().replace(/^0x/, '').replace(/:/g, '');
  if (!/^[0-9a-f]{1,42}$/.test(hex)) return undefined;
  if (hex.length % 2 === 1) hex = `0${hex}`;
  while (hex.length > 2 && hex.startsWith('00')) hex = hex.slice(2);
  return hex;
}

/** What the CA publishes for relying parties, under PKI_BASE_URL: CRLs and CA certificates (DER). */
export const PKI_OBJECTS = {
  'root.crt': 'application/pkix-cert',
  'issuing.crt': 'application/pkix-cert',
  'root.crl': 'application/pkix-crl',
  'issuing.crl': 'application/pkix-crl',
} as const;
export type PkiObjectName = keyof typeof PKI_OBJECTS;

/** Where published objects go: a directory served by the local runner, or S3 behind CloudFront. */
export interface PkiPublisher {
  publish(name: PkiObjectName, der: Buffer, options: { readonly maxAgeSeconds: number }): Promise<void>;
  /** What is published under the name now (undefined: nothing yet). */
  read(name: PkiObjectName): Promise<Buffer | undefined>;
  /** For logs: a path or bucket (never contents). */
  readonly location: string;
}

/** A CRL as published: its number and entries (read back from what the CA signed). */
export interface PublishedRevocations {
  readonly number: number;
  readonly revoked: readonly RevokedEntry[];
}

/** The entries of the next CRL, and the revocations the records no longer show. */
export interface MergedRevocations {
  readonly entries: RevokedEntry[];
  /**
   * Entries of the published CRL the records do not list (the row was deleted, or its revocation
   * removed) for a certificate not known to have expired: kept in the CRL all the same.
   */
  readonly restored: RevokedEntry[];
}

/**
 * Revocation is monotonic: the next CRL lists what the records say is revoked, plus every entry of the
 * published (HSM-signed) CRL whose certificate is not known to have expired, as published there (its time
 * and reason), whatever the records say now. Only a record showing the certificate expired before `now`
 * lets an entry go (RFC 5280 5.1.2.6: a full CRL may drop expired certificates). Pure.
 */
export function mergeRevocations(
  fromRecords: readonly RevokedEntry[],
  published: PublishedRevocations | undefined,
  statuses: ReadonlyMap<string, CertificateStatus>,
  now: number,
): MergedRevocations {
  const bySerial = new Map(fromRecords.map((e) => [e.serialHex, e]));
  const restored: RevokedEntry[] = [];
  for (const entry of published?.revoked ?? []) {
    if (bySerial.has(entry.serialHex)) continue;
    const status = statuses.get(entry.serialHex);
    if (status && status.notAfter < now) continue;
    bySerial.set(entry.serialHex, entry);
    restored.push(entry);
  }
  return { entries: [...bySerial.values()], restored };
}

/** How the three records of a revocation (certificate record, audit log, published CRL) disagree. */
export type RevocationDisagreementKind =
  /** The audit log or the published CRL says revoked; the certificate record does not (any more). */
  | 'record-lost'
  /** The record or the CRL says revoked, and no `certificate.revoked` event says so. */
  | 'unaudited'
  /** Revoked before the published CRL was made, unexpired, and not in it. */
  | 'unpublished';

export interface RevocationDisagreement {
  readonly serialHex: string;
  readonly kind: RevocationDisagreementKind;
  readonly detail: string;
}

export interface RevocationEvidence {
  /**
   * The certificate records of every serial revoked in a record, in the audit log or in the CRL (a serial
   * without a record is absent).
   */
  readonly records: ReadonlyMap<string, CertificateStatus>;
  /** Serials of the `certificate.revoked` events in the audit log. */
  readonly audited: ReadonlySet<string>;
  /** The published issuing CRL, verified against the issuing CA's key (undefined: none yet). */
  readonly published?: { readonly thisUpdate: Date; readonly revoked: readonly RevokedEntry[] };
  /** Epoch ms. */
  readonly now: number;
}

/**
 * Cross-checks what relying parties depend on: each revocation must be in the certificate record, in the
 * audit log, and (once a CRL was made after it, until the certificate expires) in the published CRL. An
 * attacker who writes the table can remove a revocation from a record or add one; only the CA key signs a
 * CRL and only the audit key covers the log, so a disagreement names the record as the suspect. Pure.
 */
export function crossCheckRevocations(evidence: RevocationEvidence): RevocationDisagreement[] {
  const published = new Map((evidence.published?.revoked ?? []).map((e) => [e.serialHex, e]));
  const revokedInRecords = [...evidence.records.values()].filter((r) => r.revocation).map((r) => r.serialHex);
  const serials = new Set([...revokedInRecords, ...evidence.audited, ...published.keys()]);
  const out: RevocationDisagreement[] = [];
  const add = (serialHex: string, kind: RevocationDisagreementKind, detail: string): void => {
    out.push({ serialHex, kind, detail });
  };
  for (const serialHex of [...serials].sort()) {
    const record = evidence.records.get(serialHex);
    const revocation = record?.revocation;
    const audited = evidence.audited.has(serialHex);
    const listed = published.has(serialHex);
    if (!revocation) {
      const says = [audited && 'the audit log', listed && 'the published CRL'].filter(Boolean).join(' and ');
      add(
        serialHex,
        'record-lost',
        `${says} say${audited && listed ? '' : 's'} revoked; ${record ? 'the certificate record shows no revocation' : 'there is no certificate record'}`,
      );
    }
    if (!audited) {
      add(
        serialHex,
        'unaudited',
        `${revocation ? 'the certificate record' : 'the published CRL'} says revoked; no certificate.revoked event in the audit log`,
      );
    }
    const expired = record !== undefined && record.notAfter < evidence.now;
    if (revocation && !listed && !expired && evidence.published) {
      if (revocation.revokedAt < evidence.published.thisUpdate.getTime()) {
        add(
          serialHex,
          'unpublished',
          `revoked at ${new Date(revocation.revokedAt).toISOString()}, missing from the CRL of ${evidence.published.thisUpdate.toISOString()}`,
        );
      }
    }
  }
  return out;
}
