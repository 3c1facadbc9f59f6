/**
 * Gathers the three records of every revocation (the certificate records, the audit log's
 * `certificate.revoked` events, the published issuing CRL verified against the issuing CA's key) and
 * cross-checks them (core crossCheckRevocations). Offline: for `npm run audit -- verify`.
 */
import { crossCheckRevocations, type RevocationDisagreement, type RevocationStore } from '@pipeline/core/pki';
import type { AuditEvent } from '@pipeline/core/audit';
import { CrlInvalidError, verifyCrl } from '@pipeline/der';

export interface RevocationCheckInput {
  readonly store: Pick<RevocationStore, 'revokedUnexpired' | 'statuses'>;
  /** Every event of the audit log (only `certificate.revoked` ones count). */
  readonly events: readonly AuditEvent[];
  /** The published issuing CRL (undefined: none yet). */
  readonly publishedCrl?: Buffer;
  /** The issuing CA certificate (DER) the CRL must verify under. */
  readonly issuingCertificate: Buffer;
  readonly now: number;
}

export interface RevocationCheck {
  /** Revocations in the records. */
  readonly revoked: number;
  /** The published CRL's number and entry count; undefined when none is published. */
  readonly crl?: { readonly number: number; readonly entries: number; readonly thisUpdate: Date };
  /** Why the published CRL was not read (it does not verify: not this CA's). */
  readonly crlInvalid?: string;
  readonly disagreements: readonly RevocationDisagreement[];
}

export async function checkRevocations(input: RevocationCheckInput): Promise<RevocationCheck> {
  let published: ReturnType<typeof verifyCrl> | undefined;
  let crlInvalid: string | undefined;
  if (input.publishedCrl) {
    try {
      published = verifyCrl(input.publishedCrl, input.issuingCertificate);
    } catch (err) {
      if (!(err instanceof CrlInvalidError)) throw err;
      crlInvalid = `the published CRL does not verify under the issuing CA: ${err.message}`;
    }
  }
  const audited = new Set(input.events.flatMap((e) => (e.type === 'certificate.revoked' ? [e.serial] : [])));
  // Every revoked record (expired ones too: at 0 every notAfter qualifies), then the others named.
  const revoked = await input.store.revokedUnexpired(0);
  const named = [...audited, ...(published?.revoked ?? []).map((e) => e.serialHex)];
  const records = await input.store.statuses([...revoked.map((e) => e.serialHex), ...named]);
  const disagreements = crossCheckRevocations({
    records,
    audited,
    published: published && { thisUpdate: published.thisUpdate, revoked: published.revoked },
    now: input.now,
  });
  return {
    revoked: revoked.length,
    crl: published && {
      number: published.number,
      entries: published.revoked.length,
      thisUpdate: published.thisUpdate,
    },
    crlInvalid,
    disagreements,
  };
}
