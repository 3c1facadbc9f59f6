import type { CaConfig } from '@pipeline/config';
import type { CertificateStatus, Hsm, RevocationStore, RevokedEntry } from '@pipeline/core';
import {
  CrlInvalidError,
  OcspMalformedRequestError,
  certIdHex,
  ocspErrorResponse,
  ocspIssuerOf,
  parseCertificate,
  parseOcspRequest,
  pemToDer,
  signOcspResponse,
  verifyCrl,
  type CertificateSigner,
  type OcspAnswer,
  type OcspIssuer,
} from '@pipeline/pki';
import { findCaKey, hsmSigner, parseCaChain } from './ca-keys';
import { CaNotReadyError } from './errors';
import type { CaCertificates } from './types';

export type OcspResponderConfig = Pick<
  CaConfig,
  'ocspKeyLabel' | 'ocspKeyType' | 'ocspResponseValiditySeconds'
>;

export interface OcspResponderDeps {
  /** A login that reaches the OCSP responder's key (and, where the HSM allows, nothing else). */
  readonly hsm: Pick<Hsm, 'findPrivateKey' | 'findPublicKeySpki' | 'signDigest'>;
  readonly store: Pick<RevocationStore, 'statuses'>;
  /** The issuing CA's certificate (whose serials are answered) and the responder's own certificate. */
  readonly caCertificates: CaCertificates;
  readonly config: OcspResponderConfig;
  /** The issuing CA's CRL as published now (what the CA signed), or undefined. */
  readonly publishedCrl: () => Promise<Buffer | undefined>;
  /** How long a read CRL is used before it is read again; default 30 s. */
  readonly crlRefreshMs?: number;
  /** Responses kept at most (the oldest go first); default 10,000. */
  readonly maxCachedResponses?: number;
  readonly now?: () => number;
}

export interface OcspResult {
  readonly der: Buffer;
  /** A response made earlier for the same certificates in the same states (no HSM operation). */
  readonly cached: boolean;
}

interface Cached {
  readonly der: Buffer;
  /** Epoch ms after which the response is made again (before its nextUpdate). */
  readonly renewAt: number;
}

/**
 * The delegated OCSP responder (RFC 6960) for the issuing CA. It holds only the responder's key. A
 * certificate is `revoked` when the published CRL (read back and verified against the issuing CA's key)
 * lists it, or when its record says so; `good` when its record exists and says neither; a request about
 * serials this CA never issued gets the unsigned `unauthorized` (so invented serials cost no signature).
 * Responses are signed once per certificate state and reused until that state changes or a fifth of their
 * validity is left: a flood of requests costs reads, not HSM operations. A reused response carries no
 * nonce (RFC 8954 lets a responder answer without one); a request with a nonce that cannot be served from
 * the cache gets its nonce echoed.
 */
export class OcspResponder {
  private readonly now: () => number;
  private readonly issuer: OcspIssuer;
  private readonly cache = new Map<string, Cached>();
  private crl: { readonly read: number; readonly revoked: Map<string, RevokedEntry> } | undefined;
  private crlRead: Promise<Map<string, RevokedEntry>> | undefined;
  /** HSM signatures made (for metrics and tests). */
  public signatures = 0;

  private constructor(
    private readonly deps: OcspResponderDeps,
    private readonly issuingDer: Buffer,
    private readonly signer: CertificateSigner,
    private readonly responderCertificateDer: Buffer,
  ) {
    this.now = deps.now ?? Date.now;
    this.issuer = ocspIssuerOf(issuingDer);
  }

  /** Checks the responder's key on the token matches its certificate. */
  public static async create(deps: OcspResponderDeps): Promise<OcspResponder> {
    const { caCertificates, config } = deps;
    if (!caCertificates.ocspPem)
      throw new CaNotReadyError('no OCSP responder certificate: run the CA bootstrap');
    const chain = parseCaChain(caCertificates);
    const responderDer = pemToDer(caCertificates.ocspPem);
    const responder = parseCertificate(responderDer);
    const key = await findCaKey(deps.hsm as Hsm, config.ocspKeyLabel, config.ocspKeyType);
    if (!key || !key.spki.equals(responder.subjectPublicKeySpki)) {
      throw new CaNotReadyError(
        `the key ${config.ocspKeyLabel} does not match the OCSP responder certificate`,
      );
    }
    const signer = hsmSigner(deps.hsm as Hsm, key, responder, config.ocspKeyType);
    return new OcspResponder(deps, chain.issuing.der, signer, responderDer);
  }

  /**
   * The OCSP response (DER) to a request (DER): `successful` with good / revoked / unknown per
   * certificate asked about; `malformedRequest` for what does not parse; `unauthorized` when nothing
   * asked about was issued by this CA.
   */
  public async respond(requestDer: Buffer): Promise<OcspResult> {
    let request: ReturnType<typeof parseOcspRequest>;
    try {
      request = parseOcspRequest(requestDer);
    } catch (err) {
      if (err instanceof OcspMalformedRequestError)
        return { der: ocspErrorResponse('malformedRequest'), cached: false };
      throw err;
    }
    const ours = request.queries.filter((q) => q.forIssuer(this.issuer));
    const [statuses, published] = await Promise.all([
      ours.length > 0
        ? this.deps.store.statuses(ours.map((q) => q.serialHex))
        : new Map<string, CertificateStatus>(),
      this.publishedRevocations(),
    ]);
    const answers: OcspAnswer[] = request.queries.map((query) => ({
      certId: query.certId,
      status: query.forIssuer(this.issuer)
        ? statusOf(published.get(query.serialHex), statuses.get(query.serialHex))
        : { kind: 'unknown' },
    }));
    if (answers.every((a) => a.status.kind === 'unknown')) {
      return { der: ocspErrorResponse('unauthorized'), cached: false };
    }
    const key = cacheKey(answers);
    const now = this.now();
    const hit = this.cache.get(key);
    if (hit && hit.renewAt > now) return { der: hit.der, cached: true };
    const fresh = await this.sign(answers, undefined, now);
    this.remember(key, { der: fresh, renewAt: now + this.deps.config.ocspResponseValiditySeconds * 800 });
    if (!request.nonce) return { der: fresh, cached: false };
    return { der: await this.sign(answers, request.nonce, now), cached: false };
  }

  private async sign(answers: OcspAnswer[], nonce: Buffer | undefined, now: number): Promise<Buffer> {
    this.signatures++;
    const at = new Date(Math.floor(now / 1000) * 1000);
    return signOcspResponse(
      {
        answers,
        producedAt: at,
        thisUpdate: at,
        nextUpdate: new Date(at.getTime() + this.deps.config.ocspResponseValiditySeconds * 1000),
        nonce,
        responderCertificateDer: this.responderCertificateDer,
      },
      this.signer,
    );
  }

  private remember(key: string, value: Cached): void {
    this.cache.delete(key);
    this.cache.set(key, value);
    const max = this.deps.maxCachedResponses ?? 10_000;
    while (this.cache.size > max) this.cache.delete(this.cache.keys().next().value!);
  }

  /** The published CRL's entries by serial, read at most every crlRefreshMs (concurrent callers share a read). */
  private async publishedRevocations(): Promise<Map<string, RevokedEntry>> {
    const now = this.now();
    if (this.crl && now - this.crl.read < (this.deps.crlRefreshMs ?? 30_000)) return this.crl.revoked;
    this.crlRead ??= this.readCrl(now).finally(() => (this.crlRead = undefined));
    return this.crlRead;
  }

  private async readCrl(now: number): Promise<Map<string, RevokedEntry>> {
    let revoked = this.crl?.revoked ?? new Map<string, RevokedEntry>();
    const der = await this.deps.publishedCrl().catch(() => undefined);
    if (der) {
      try {
        revoked = new Map(verifyCrl(der, this.issuingDer).revoked.map((e) => [e.serialHex, e]));
      } catch (err) {
        // A published object that is not the CA's CRL changes nothing: the last good one stands.
        if (!(err instanceof CrlInvalidError)) throw err;
      }
    }
    this.crl = { read: now, revoked };
    return revoked;
  }
}

/** The published CRL wins over the record: a revocation the CA signed cannot be undone by a table edit. */
function statusOf(
  listed: RevokedEntry | undefined,
  record: CertificateStatus | undefined,
): OcspAnswer['status'] {
  if (listed) return { kind: 'revoked', entry: listed };
  if (record?.revocation) {
    return {
      kind: 'revoked',
      entry: {
        serialHex: record.serialHex,
        revokedAt: new Date(record.revocation.revokedAt),
        reason: record.revocation.reason,
      },
    };
  }
  return record ? { kind: 'good' } : { kind: 'unknown' };
}

/** The certificates asked about and what is said of each: the same key means the same signed content. */
function cacheKey(answers: readonly OcspAnswer[]): string {
  return answers
    .map((a) => {
      const status =
        a.status.kind === 'revoked'
          ? `revoked:${a.status.entry.revokedAt.getTime()}:${a.status.entry.reason}`
          : a.status.kind;
      return `${certIdHex(a.certId)}/${status}`;
    })
    .join('|');
}
