import { createHash } from 'node:crypto';
import { pkiUrls, type CaConfig } from '../../config/src';
import {
  subjectAttributes,
  type AuditSink,
  type BatchCertificateIssuer,
  type CertificateIssuedEvent,
  type CertificateIssuer,
  type IssueCertificateInput,
  type IssueOutcome,
  type IssuedCertificate,
  type StoredSignRequest,
  type Hsm,
} from '../../core/src';
import {
  encodeName,
  leafExtensions,
  nameDer,
  pem,
  randomSerial,
  signCertificate,
  verifyCsr,
  type CertificateSigner,
} from '../../pki/src';
import { BACKDATE_MS } from './bootstrap';
import { findCaKey, hsmSigner, parseCaChain, type CaChain } from './ca-keys';
import {
  AlreadyCertifiedError,
  CaNotReadyError,
  KeyMismatchError,
  RequestNotSigningError,
  RequestUnknownError,
  SerialCollisionError,
} from './errors';
import type { CaCertificates, IssuedCertificateRecord, IssuedCertificateStore, RequestLookup } from './types';

const DAY_MS = 86_400_000;
/** Request ids are short opaque strings; anything longer is not one (and would be refused as a key). */
const MAX_REQUEST_ID_LENGTH = 256;

export type CaIssuanceConfig = Pick<
  CaConfig,
  'keyType' | 'issuingKeyLabel' | 'leafValidityDays' | 'policyOid' | 'pkiBaseUrl'
>;

export interface CertificateAuthorityDeps {
  readonly hsm: Hsm;
  readonly requests: RequestLookup;
  readonly certificates: IssuedCertificateStore;
  readonly caCertificates: CaCertificates;
  readonly config: CaIssuanceConfig;
  /**
   * The tamper-evident log: every certificate the CA key signs is appended (serial, subject hash) before
   * it is stored or returned, so no released certificate is missing from the log.
   */
  readonly audit?: AuditSink;
  /** Epoch milliseconds; injectable for tests. */
  readonly now?: () => number;
}

function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function validRequestId(id: unknown): id is string {
  return typeof id === 'string' && id.length > 0 && id.length <= MAX_REQUEST_ID_LENGTH;
}

/** The audit event of an issuance: serial, subject hash, and which identity assertion vouched for it. */
function issuedEvent(request: StoredSignRequest, record: IssuedCertificateRecord): CertificateIssuedEvent {
  return {
    type: 'certificate.issued',
    requestId: record.requestId,
    serial: record.serialHex,
    subjectHash: record.subjectHash,
    ...(request.identity?.source === 'assertion' ? { assertionHash: request.identity.assertionHash } : {}),
  };
}

const succeeded = (certificate: IssuedCertificate): IssueOutcome => ({ ok: true, certificate });
const failed = (error: unknown): IssueOutcome => ({ ok: false, error });

/**
 * Issues natural-person signing certificates for one-time keys. The subject comes from the sign request
 * record, never from the CSR; the CSR only proves possession of the key. The issuing CA key signs inside
 * the HSM. One certificate per request: a retry with the same key gets the stored certificate back.
 */
export class CertificateAuthority implements CertificateIssuer, BatchCertificateIssuer {
  private readonly now: () => number;

  private constructor(
    private readonly deps: CertificateAuthorityDeps,
    private readonly chain: CaChain,
    private readonly signer: CertificateSigner,
  ) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * Checks the CA is usable before the first request: the certificates form a chain and the issuing key
   * on the token is the one the issuing certificate certifies. Throws CaNotReadyError otherwise.
   */
  public static async create(deps: CertificateAuthorityDeps): Promise<CertificateAuthority> {
    const chain = parseCaChain(deps.caCertificates);
    const key = await findCaKey(deps.hsm, deps.config.issuingKeyLabel, deps.config.keyType);
    if (!key || !key.spki.equals(chain.issuing.subjectPublicKeySpki)) {
      throw new CaNotReadyError('the issuing CA key on the token does not match the issuing CA certificate');
    }
    return new CertificateAuthority(
      deps,
      chain,
      hsmSigner(deps.hsm, key, chain.issuing, deps.config.keyType),
    );
  }

  /** Issuing CA, then root. */
  public get chainPem(): readonly string[] {
    return [this.chain.pems.issuingPem, this.chain.pems.rootPem];
  }

  public async issue(input: IssueCertificateInput): Promise<IssuedCertificate> {
    const csr = verifyCsr(input.csrDer);
    const publicKeyHash = sha256Hex(csr.publicKeySpki);

    const id = input.requestId;
    if (!validRequestId(id)) throw new RequestUnknownError();
    // Both reads at once: one round trip of latency instead of two.
    const [request, existing] = await Promise.all([
      this.deps.requests.get(id),
      this.deps.certificates.getByRequest(id),
    ]);
    if (!request) throw new RequestUnknownError();
    if (request.status !== 'signing') throw new RequestNotSigningError(request.status);
    if (csr.keyType !== request.keyType) throw new KeyMismatchError(request.keyType, csr.keyType);
    // The same key again (a retry): the stored certificate. Another key: refused, unless the caller is
    // the attempt that now owns the request and the certificate went to an attempt it took over. That
    // attempt died before storing its result, so its certificate never reached anyone; its key died with
    // its HSM session. The new key's certificate replaces it and the old serial is marked superseded.
    const supersede =
      existing !== undefined &&
      existing.publicKeyHash !== publicKeyHash &&
      input.attemptId !== undefined &&
      input.attemptId === request.attemptId &&
      existing.attemptId !== input.attemptId;
    if (existing && !supersede) return this.retried(existing, publicKeyHash);

    const subject = encodeName(subjectAttributes(request.signer));
    for (let attempt = 0; ; attempt++) {
      const record = await this.certify(id, subject, csr.publicKeySpki, publicKeyHash, input.attemptId);
      await this.deps.audit?.append(issuedEvent(request, record));
      try {
        const result = existing
          ? await this.deps.certificates.replace(existing, record)
          : await this.deps.certificates.record(record);
        return result.stored ? this.issued(record) : this.retried(result.existing, publicKeyHash);
      } catch (err) {
        // A fresh serial is drawn again; a second collision means the RNG is broken, so stop.
        if (!(err instanceof SerialCollisionError) || attempt > 0) throw err;
      }
    }
  }

  /**
   * Certifies a batch: one read of the requests and of their certificates, one HSM signature per new
   * certificate, one audit append and one write for all of them. Items that are not plain first
   * issuances (retries, takeovers, repeated ids, write conflicts) take the single-item path and its
   * rules. Outcomes are per item, in input order.
   */
  public async issueMany(inputs: readonly IssueCertificateInput[]): Promise<IssueOutcome[]> {
    const { requests, certificates } = this.deps;
    if (!requests.getMany || !certificates.getManyByRequest || !certificates.recordMany) {
      return Promise.all(inputs.map((input) => this.issue(input).then(succeeded, failed)));
    }
    const ids = [...new Set(inputs.map((i) => i.requestId).filter(validRequestId))];
    const [records, existing] = await Promise.all([
      requests.getMany(ids),
      certificates.getManyByRequest(ids),
    ]);
    const outcomes = new Array<IssueOutcome>(inputs.length);
    const single: number[] = [];
    const seen = new Set<string>();
    const candidates: Array<{ index: number; request: StoredSignRequest; spki: Buffer }> = [];
    inputs.forEach((input, index) => {
      try {
        const csr = verifyCsr(input.csrDer);
        const request = validRequestId(input.requestId) ? records.get(input.requestId) : undefined;
        if (!request || existing.has(input.requestId) || seen.has(input.requestId)) {
          single.push(index);
          return;
        }
        if (request.status !== 'signing') throw new RequestNotSigningError(request.status);
        if (csr.keyType !== request.keyType) throw new KeyMismatchError(request.keyType, csr.keyType);
        seen.add(input.requestId);
        candidates.push({ index, request, spki: csr.publicKeySpki });
      } catch (err) {
        outcomes[index] = failed(err);
      }
    });
    const fresh = (
      await Promise.all(
        candidates.map(async ({ index, request, spki }) => {
          try {
            const subject = encodeName(subjectAttributes(request.signer));
            const input = inputs[index];
            const record = await this.certify(
              input.requestId,
              subject,
              spki,
              sha256Hex(spki),
              input.attemptId,
            );
            return { index, record, event: issuedEvent(request, record) };
          } catch (err) {
            outcomes[index] = failed(err);
            return undefined;
          }
        }),
      )
    ).filter((f) => f !== undefined);
    if (fresh.length > 0) {
      try {
        // Logged before stored or returned, as on the single path: no released certificate is unlogged.
        await this.deps.audit?.appendMany(fresh.map((f) => f.event));
        const stored = await certificates.recordMany(fresh.map((f) => f.record));
        fresh.forEach((f, k) => {
          if (stored[k]) outcomes[f.index] = succeeded(this.issued(f.record));
          else single.push(f.index);
        });
      } catch {
        // Nothing of these was released: each item decides alone (the single path reads what landed).
        single.push(...fresh.map((f) => f.index));
      }
    }
    await Promise.all(
      single.map(async (index) => {
        outcomes[index] = await this.issue(inputs[index]).then(succeeded, failed);
      }),
    );
    return outcomes;
  }

  private async certify(
    requestId: string,
    subject: ReturnType<typeof encodeName>,
    spki: Buffer,
    publicKeyHash: string,
    attemptId: string | undefined,
  ): Promise<IssuedCertificateRecord> {
    const config = this.deps.config;
    const urls = pkiUrls(config.pkiBaseUrl);
    const now = this.now();
    const notBefore = now - BACKDATE_MS;
    // A leaf never outlives its issuer.
    const notAfter = Math.min(
      notBefore + config.leafValidityDays * DAY_MS,
      this.chain.issuing.notAfter.getTime(),
    );
    const serial = randomSerial();
    const der = await signCertificate(
      {
        serial,
        subject,
        subjectPublicKeySpki: spki,
        notBefore: new Date(notBefore),
        notAfter: new Date(notAfter),
        extensions: leafExtensions({
          subjectPublicKeySpki: spki,
          issuerKeyIdentifier: this.chain.issuing.keyIdentifier,
          policyOid: config.policyOid,
          crlUrl: urls.issuingCrl,
          caIssuersUrl: urls.issuingCertificate,
          ocspUrl: urls.ocsp,
        }),
      },
      this.signer,
    );
    return {
      serialHex: serial.toString('hex'),
      requestId,
      subjectHash: sha256Hex(nameDer(subject)),
      publicKeyHash,
      // Seconds precision, as in the certificate.
      notBefore: Math.floor(notBefore / 1000) * 1000,
      notAfter: Math.floor(notAfter / 1000) * 1000,
      issuedAt: now,
      certificatePem: pem('CERTIFICATE', der),
      chainPem: this.chainPem,
      ...(attemptId === undefined ? {} : { attemptId }),
    };
  }

  private retried(existing: IssuedCertificateRecord, publicKeyHash: string): IssuedCertificate {
    if (existing.publicKeyHash !== publicKeyHash) throw new AlreadyCertifiedError();
    return this.issued(existing);
  }

  private issued(record: IssuedCertificateRecord): IssuedCertificate {
    return {
      certificatePem: record.certificatePem,
      chainPem: [...record.chainPem],
      serialHex: record.serialHex,
    };
  }
}
