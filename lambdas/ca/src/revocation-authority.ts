import {
  mergeRevocations,
  normalizeSerial,
  type PublishedRevocations,
  type RevocationReason,
  type RevocationStore,
  type RevokedEntry,
} from '@pipeline/core/pki';
import type { AuditSink, RequestRevokeOutcome, RevokeOutcome } from '@pipeline/core/audit';
import type { Hsm } from '@pipeline/core/shared';
import { CrlInvalidError, signCrl, verifyCrl, type CertificateSigner } from '@pipeline/der';
import { findCaKey, hsmSigner, parseCaChain, type CaChain } from './ca-keys';
import { CaNotReadyError } from './errors';
import type { CaCertificates } from '@pipeline/core/pki';
import type { CaConfig } from '@pipeline/config';

const HOUR_MS = 3_600_000;

export type RevocationConfig = Pick<
  CaConfig,
  'keyType' | 'rootKeyLabel' | 'issuingKeyLabel' | 'crlValidityHours'
>;

export interface RevocationAuthorityDeps {
  readonly hsm: Hsm;
  readonly store: RevocationStore;
  /** Root and issuing CA certificates. */
  readonly caCertificates: CaCertificates;
  readonly config: RevocationConfig;
  readonly now?: () => number;
}

/**
 * Revokes a serial this CA issued, once: a second revocation reports the first one's time and reason.
 * The audit event (serial, reason, request) is appended before the outcome is returned, with its receipt.
 * Needs no CA key: the CRL and OCSP answers that follow are signed by RevocationAuthority.
 */
export async function revokeCertificate(
  deps: { readonly store: RevocationStore; readonly audit?: AuditSink; readonly now?: () => number },
  serial: string,
  reason: RevocationReason,
  revokedBy: string,
): Promise<RevokeOutcome> {
  const serialHex = normalizeSerial(serial);
  if (!serialHex) return { outcome: 'unknown' };
  // Whole seconds: CRL and OCSP times carry no fractions (RFC 5280 4.1.2.5.2), and all three must agree.
  const revokedAt = Math.floor((deps.now ?? Date.now)() / 1000) * 1000;
  const outcome = await deps.store.revoke(serialHex, { revokedAt, reason, revokedBy });
  if (outcome.outcome === 'revoked' && deps.audit) {
    const receipt = await deps.audit.append({
      type: 'certificate.revoked',
      serial: serialHex,
      reason,
      requestId: outcome.status.requestId,
    });
    return { ...outcome, receipt };
  }
  return outcome;
}

/**
 * Revokes the certificate the CA issued for a request, for the client that asks: the serial comes from the
 * CA's own record of the request, and only when the CA recorded the request id as that client's
 * (registerOwner), never from a request record or the caller. The ownership is checked first, so another
 * client learns nothing of the request.
 */
export async function revokeRequestCertificate(
  deps: { readonly store: RevocationStore; readonly audit?: AuditSink; readonly now?: () => number },
  requestId: string,
  client: string,
  reason: RevocationReason,
): Promise<RequestRevokeOutcome> {
  const recorded = await deps.store.requestCertificate(requestId);
  if (recorded.owner === undefined || recorded.owner !== client) return { outcome: 'not-owned' };
  if (recorded.serialHex === undefined) return { outcome: 'unknown' };
  return revokeCertificate(deps, recorded.serialHex, reason, client);
}

/**
 * Retires a one-time credential never used: its certificate (the CA's record of the creating request)
 * revoked `cessationOfOperation`, unless the CA released it to a request (`used`: a signature may exist).
 * Decided on the CA's record, not the request table's.
 */
export async function retireCredentialCertificate(
  deps: { readonly store: RevocationStore; readonly audit?: AuditSink; readonly now?: () => number },
  requestId: string,
  requestedBy: string,
): Promise<RequestRevokeOutcome> {
  const recorded = await deps.store.requestCertificate(requestId);
  if (recorded.serialHex === undefined) return { outcome: 'unknown' };
  if (recorded.activatedBy !== undefined) return { outcome: 'used' };
  return revokeCertificate(deps, recorded.serialHex, 'cessationOfOperation', requestedBy);
}

/** A CRL signed in the HSM, ready to publish. */
export interface PublishedCrl {
  readonly der: Buffer;
  readonly number: number;
  readonly thisUpdate: Date;
  readonly nextUpdate: Date;
  readonly entries: number;
  /** Entries of the previous CRL the records no longer showed, kept all the same (see mergeRevocations). */
  readonly restored: readonly RevokedEntry[];
}

/**
 * The CA's CRLs: full CRLs for the issuing CA (signed by its key) and for the root (signed by the root
 * key). Revocation is monotonic: the issuing CRL carries every entry of the previously published one
 * (read back and verified against the issuing CA's key) unless the certificate is known to have expired,
 * whatever the records say now, and its number always grows past the previous one's. Nothing here is on
 * the signing path, and nothing here holds the OCSP responder's key.
 */
export class RevocationAuthority {
  private readonly now: () => number;

  private constructor(
    private readonly deps: RevocationAuthorityDeps,
    private readonly chain: CaChain,
    private readonly signers: { readonly root: CertificateSigner; readonly issuing: CertificateSigner },
  ) {
    this.now = deps.now ?? Date.now;
  }

  /** Checks the root and issuing keys on the token match their certificates. */
  public static async create(deps: RevocationAuthorityDeps): Promise<RevocationAuthority> {
    const { hsm, config, caCertificates } = deps;
    const chain = parseCaChain(caCertificates);
    const key = async (label: string, spki: Buffer) => {
      const found = await findCaKey(hsm, label, config.keyType);
      if (!found || !found.spki.equals(spki)) {
        throw new CaNotReadyError(`the key ${label} on the token does not match its certificate`);
      }
      return found;
    };
    const rootKey = await key(config.rootKeyLabel, chain.root.subjectPublicKeySpki);
    const issuingKey = await key(config.issuingKeyLabel, chain.issuing.subjectPublicKeySpki);
    return new RevocationAuthority(deps, chain, {
      root: hsmSigner(hsm, rootKey, chain.root, config.keyType),
      issuing: hsmSigner(hsm, issuingKey, chain.issuing, config.keyType),
    });
  }

  /**
   * The issuing CA's full CRL: every revoked, unexpired certificate of the records, and every entry of
   * `previousDer` (the CRL published now) not known to have expired. A previous CRL that does not verify
   * under the issuing CA's key is ignored (it is not ours).
   */
  public async issuingCrl(previousDer?: Buffer): Promise<PublishedCrl> {
    const now = this.now();
    const previous = previousDer ? this.readPublished(previousDer) : undefined;
    const fromRecords = await this.deps.store.revokedUnexpired(now);
    const listed = new Set(fromRecords.map((e) => e.serialHex));
    const missing = (previous?.revoked ?? []).filter((e) => !listed.has(e.serialHex)).map((e) => e.serialHex);
    const statuses = missing.length > 0 ? await this.deps.store.statuses(missing) : new Map();
    const merged = mergeRevocations(fromRecords, previous, statuses, now);
    return this.crl('issuing', merged.entries, now, previous?.number, merged.restored);
  }

  /** The root's CRL: it certifies only issuing CAs, and revoking one is an operator's act outside this CA. */
  public async rootCrl(): Promise<PublishedCrl> {
    return this.crl('root', [], this.now(), undefined, []);
  }

  /** A published issuing CRL, verified against the issuing CA's key; undefined when it does not verify. */
  public readPublished(der: Buffer): PublishedRevocations | undefined {
    try {
      const crl = verifyCrl(der, this.chain.issuing.der);
      return { number: crl.number, revoked: crl.revoked };
    } catch (err) {
      if (err instanceof CrlInvalidError) return undefined;
      throw err;
    }
  }

  private async crl(
    issuer: 'root' | 'issuing',
    revoked: readonly RevokedEntry[],
    now: number,
    previousNumber: number | undefined,
    restored: readonly RevokedEntry[],
  ): Promise<PublishedCrl> {
    // The counter lives in a table: never let it take the published number backwards.
    const counted = await this.deps.store.nextCrlNumber(issuer);
    const number = Math.max(counted, (previousNumber ?? 0) + 1);
    const thisUpdate = new Date(Math.floor(now / 1000) * 1000);
    const nextUpdate = new Date(thisUpdate.getTime() + this.deps.config.crlValidityHours * HOUR_MS);
    const der = await signCrl({ number, thisUpdate, nextUpdate, revoked }, this.signers[issuer]);
    return { der, number, thisUpdate, nextUpdate, entries: revoked.length, restored };
  }

  /** The CA certificates as relying parties fetch them (AIA caIssuers): DER. */
  public certificateDer(which: 'root' | 'issuing'): Buffer {
    return this.chain[which].der;
  }
}
