import {
  normalizeSerial,
  type AuditSink,
  type CertificateStatus,
  type RevocationReason,
  type RevocationStore,
  type RevokeOutcome,
  type Hsm,
} from '../../core/src';
import {
  OcspMalformedRequestError,
  ocspErrorResponse,
  ocspIssuerOf,
  parseCertificate,
  parseOcspRequest,
  pemToDer,
  signCrl,
  signOcspResponse,
  type CertificateSigner,
  type OcspAnswer,
  type OcspIssuer,
} from '../../pki/src';
import { findCaKey, hsmSigner, parseCaChain, type CaChain } from './ca-keys';
import { CaNotReadyError } from './errors';
import type { CaCertificates } from './types';
import type { CaConfig } from '../../config/src';

const HOUR_MS = 3_600_000;

export type RevocationConfig = Pick<
  CaConfig,
  | 'keyType'
  | 'rootKeyLabel'
  | 'issuingKeyLabel'
  | 'ocspKeyLabel'
  | 'ocspKeyType'
  | 'crlValidityHours'
  | 'ocspResponseValiditySeconds'
>;

export interface RevocationAuthorityDeps {
  readonly hsm: Hsm;
  readonly store: RevocationStore;
  /** Root and issuing CA certificates, and the delegated OCSP responder's certificate. */
  readonly caCertificates: CaCertificates;
  readonly config: RevocationConfig;
  readonly now?: () => number;
}

/**
 * Revokes a serial this CA issued, once: a second revocation reports the first one's time and reason.
 * The audit event (serial, reason, request) is appended before the outcome is returned. Needs no key:
 * the CRL and OCSP answers that follow are signed by RevocationAuthority.
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
  if (outcome.outcome === 'revoked') {
    await deps.audit?.append({
      type: 'certificate.revoked',
      serial: serialHex,
      reason,
      requestId: outcome.status.requestId,
    });
  }
  return outcome;
}

/** A CRL signed in the HSM, ready to publish. */
export interface PublishedCrl {
  readonly der: Buffer;
  readonly number: number;
  readonly thisUpdate: Date;
  readonly nextUpdate: Date;
  readonly entries: number;
}

/**
 * The CA's signed revocation data: full CRLs for the issuing CA (signed by its key) and for the root
 * (signed by the root key), and OCSP answers signed by the delegated responder key. Everything is read
 * from the certificate records; nothing here is on the signing path.
 */
export class RevocationAuthority {
  private readonly now: () => number;
  private readonly issuer: OcspIssuer;

  private constructor(
    private readonly deps: RevocationAuthorityDeps,
    private readonly chain: CaChain,
    private readonly signers: {
      readonly root: CertificateSigner;
      readonly issuing: CertificateSigner;
      readonly ocsp?: CertificateSigner;
    },
    private readonly ocspCertificateDer: Buffer | undefined,
  ) {
    this.now = deps.now ?? Date.now;
    this.issuer = ocspIssuerOf(chain.issuing.der);
  }

  /** Checks every key on the token matches its certificate; the OCSP signer is optional (CRLs only). */
  public static async create(deps: RevocationAuthorityDeps): Promise<RevocationAuthority> {
    const { hsm, config, caCertificates } = deps;
    const chain = parseCaChain(caCertificates);
    const key = async (
      label: string,
      keyType: typeof config.keyType | typeof config.ocspKeyType,
      spki: Buffer,
    ) => {
      const found = await findCaKey(hsm, label, keyType);
      if (!found || !found.spki.equals(spki)) {
        throw new CaNotReadyError(`the key ${label} on the token does not match its certificate`);
      }
      return found;
    };
    const rootKey = await key(config.rootKeyLabel, config.keyType, chain.root.subjectPublicKeySpki);
    const issuingKey = await key(config.issuingKeyLabel, config.keyType, chain.issuing.subjectPublicKeySpki);
    let ocsp: CertificateSigner | undefined;
    let ocspDer: Buffer | undefined;
    if (caCertificates.ocspPem) {
      ocspDer = pemToDer(caCertificates.ocspPem);
      const parsed = parseCertificate(ocspDer);
      const ocspKey = await key(config.ocspKeyLabel, config.ocspKeyType, parsed.subjectPublicKeySpki);
      ocsp = hsmSigner(hsm, ocspKey, parsed, config.ocspKeyType);
    }
    return new RevocationAuthority(
      deps,
      chain,
      {
        root: hsmSigner(hsm, rootKey, chain.root, config.keyType),
        issuing: hsmSigner(hsm, issuingKey, chain.issuing, config.keyType),
        ocsp,
      },
      ocspDer,
    );
  }

  /** The status of one serial (absent: never issued here). */
  public async status(serial: string): Promise<CertificateStatus | undefined> {
    const serialHex = normalizeSerial(serial);
    return serialHex ? (await this.deps.store.statuses([serialHex])).get(serialHex) : undefined;
  }

  /** The issuing CA's full CRL: every revoked, unexpired certificate, signed by the issuing CA key. */
  public async issuingCrl(): Promise<PublishedCrl> {
    const now = this.now();
    const revoked = await this.deps.store.revokedUnexpired(now);
    return this.crl('issuing', revoked, now);
  }

  /** The root's CRL: it certifies only issuing CAs, and revoking one is an operator's act outside this CA. */
  public async rootCrl(): Promise<PublishedCrl> {
    return this.crl('root', [], this.now());
  }

  private async crl(
    issuer: 'root' | 'issuing',
    revoked: Awaited<ReturnType<RevocationStore['revokedUnexpired']>>,
    now: number,
  ): Promise<PublishedCrl> {
    const number = await this.deps.store.nextCrlNumber(issuer);
    const thisUpdate = new Date(Math.floor(now / 1000) * 1000);
    const nextUpdate = new Date(thisUpdate.getTime() + this.deps.config.crlValidityHours * HOUR_MS);
    const der = await signCrl({ number, thisUpdate, nextUpdate, revoked }, this.signers[issuer]);
    return { der, number, thisUpdate, nextUpdate, entries: revoked.length };
  }

  /** The CA certificates as relying parties fetch them (AIA caIssuers): DER. */
  public certificateDer(which: 'root' | 'issuing'): Buffer {
    return this.chain[which].der;
  }

  /**
   * The OCSP response (DER) to a request (DER): `successful` with good / revoked / unknown per
   * certificate asked about, the nonce echoed; `malformedRequest` for what does not parse;
   * `unauthorized` when nothing asked about was issued by this CA.
   */
  public async respondOcsp(requestDer: Buffer): Promise<Buffer> {
    const signer = this.signers.ocsp;
    if (!signer || !this.ocspCertificateDer) return ocspErrorResponse('tryLater');
    let request: ReturnType<typeof parseOcspRequest>;
    try {
      request = parseOcspRequest(requestDer);
    } catch (err) {
      if (err instanceof OcspMalformedRequestError) return ocspErrorResponse('malformedRequest');
      throw err;
    }
    const ours = request.queries.filter((q) => q.forIssuer(this.issuer));
    if (ours.length === 0) return ocspErrorResponse('unauthorized');
    const statuses = await this.deps.store.statuses(ours.map((q) => q.serialHex));
    const answers: OcspAnswer[] = request.queries.map((query) => {
      const status = query.forIssuer(this.issuer) ? statuses.get(query.serialHex) : undefined;
      if (!status) return { certId: query.certId, status: { kind: 'unknown' } };
      if (!status.revocation) return { certId: query.certId, status: { kind: 'good' } };
      return {
        certId: query.certId,
        status: {
          kind: 'revoked',
          entry: {
            serialHex: status.serialHex,
            revokedAt: new Date(status.revocation.revokedAt),
            reason: status.revocation.reason,
          },
        },
      };
    });
    const now = new Date(Math.floor(this.now() / 1000) * 1000);
    return signOcspResponse(
      {
        answers,
        producedAt: now,
        thisUpdate: now,
        nextUpdate: new Date(now.getTime() + this.deps.config.ocspResponseValiditySeconds * 1000),
        nonce: request.nonce,
        responderCertificateDer: this.ocspCertificateDer,
      },
      signer,
    );
  }
}
