import type { CaConfig } from '@pipeline/config';
import type { CertificateStatus, RevocationStore, RevokedEntry } from '@pipeline/core/pki';
import type { Hsm } from '@pipeline/core/shared';
import {
  CrlInvalidError,
  OcspMalformedRequestError,
  canonicalCertId,
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
} from '@pipeline/der';
import { findCaKey, hsmSigner, parseCaChain } from './ca-keys';
import { CaNotReadyError } from './errors';
import type { CaCertificates } from '@pipeline/core/pki';

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
  /** Responses kept at most (the least recently used go first); default 50,000 (about 1 KB each). */
  readonly maxCachedResponses?: number;
  readonly now?: () => number;
}

export interface OcspResult {
  readonly der: Buffer;
  /** A response made earlier for the same certificates in the same states (no HSM operation). */
  readonly cached: boolean;
}

interface Cached {
  /** What the response says of the certificate: a new state needs a new response. */
  readonly state: string;
  readonly der: Promise<Buffer>;
  /** Epoch ms after which the response is made again (before its nextUpdate). */
  readonly renewAt: number;
}

/**
 * The delegated OCSP responder (RFC 6960) for the issuing CA. It holds only the responder's key. A
 * certificate is `revoked` when the published CRL (read back and verified against the issuing CA's key)
 * lists it, or when its record says so; `good` when its record exists and says neither.
 *
 * It is not a signing oracle: it signs at most once per certificate state (and CertID hash algorithm),
 * whatever is asked. A request names one certificate (RFC 5019 2.1.1; the same CertID repeated is one):
 * one about several gets `malformedRequest`, one about a serial this CA never issued the unsigned
 * `unauthorized`. The answer for a serial is cached per serial and reused until its state changes or a
 * fifth of its validity is left; a request's nonce is not echoed (RFC 8954 lets a responder ignore it),
 * so a fresh nonce buys no fresh signature, and the CertID answered is the canonical one (a re-encoded
 * request is not a new response). Concurrent requests for the same state share one signature.
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
   * The OCSP response (DER) to a request (DER): `successful` with good / revoked for the one certificate
   * asked about; `malformedRequest` for what does not parse or asks about more than one certificate;
   * `unauthorized` when the certificate is not one this CA issued.
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
    // One certificate per request: a response answers for everything asked, and one signature over a
    // set of CertIDs chosen by the caller would be a signature per request.
    const asked = new Set(
      request.queries.map((q) => `${q.hash ?? '?'}:${q.forIssuer(this.issuer)}:${q.serialHex}`),
    );
    if (asked.size > 1) return { der: ocspErrorResponse('malformedRequest'), cached: false };
    const query = request.queries[0];
    if (!query.hash || !query.forIssuer(this.issuer)) {
      return { der: ocspErrorResponse('unauthorized'), cached: false };
    }
    const { serialHex, hash } = query;
    const [statuses, published] = await Promise.all([
      this.deps.store.statuses([serialHex]),
      this.publishedRevocations(),
    ]);
    const status = statusOf(published.get(serialHex), statuses.get(serialHex));
    // Never issued (no record, not on the CRL): nothing to sign.
    if (status.kind === 'unknown') return { der: ocspErrorResponse('unauthorized'), cached: false };
    const key = `${hash}:${serialHex}`;
    const state = stateOf(status);
    const now = this.now();
    const hit = this.cache.get(key);
    if (hit && hit.state === state && hit.renewAt > now) {
      this.remember(key, hit);
      return { der: await hit.der, cached: true };
    }
    const answer: OcspAnswer = { certId: canonicalCertId(this.issuer, serialHex, hash), status };
    const der = this.sign(answer, now);
    const entry: Cached = {
      state,
      der,
      renewAt: now + this.deps.config.ocspResponseValiditySeconds * 800,
    };
    this.remember(key, entry);
    // A failed signature is not kept: the next request tries again.
    der.catch(() => {
      if (this.cache.get(key) === entry) this.cache.delete(key);
    });
    return { der: await der, cached: false };
  }

  /**
   * The response a new certificate gets from the CA with it (the B-LT validation data without a call to
   * the responder): `good` for `serialHex`, for the SHA-1 CertID the signer's request names, made exactly
   * as respond() makes it (same responder key and certificate, producedAt = thisUpdate, nextUpdate after
   * the configured validity). The caller vouches that the certificate was just recorded and is therefore
   * neither revoked nor listed: respond() would answer the same. Later queries still come here.
   */
  public async goodAtIssuance(serialHex: string): Promise<Buffer> {
    const answer: OcspAnswer = {
      certId: canonicalCertId(this.issuer, serialHex, 'sha1'),
      status: { kind: 'good' },
    };
    return this.sign(answer, this.now());
  }

  private async sign(answer: OcspAnswer, now: number): Promise<Buffer> {
    this.signatures++;
    const at = new Date(Math.floor(now / 1000) * 1000);
    return signOcspResponse(
      {
        answers: [answer],
        producedAt: at,
        thisUpdate: at,
        nextUpdate: new Date(at.getTime() + this.deps.config.ocspResponseValiditySeconds * 1000),
        responderCertificateDer: this.responderCertificateDer,
      },
      this.signer,
    );
  }

  private remember(key: string, value: Cached): void {
    this.cache.delete(key);
    this.cache.set(key, value);
    const max = this.deps.maxCachedResponses ?? 50_000;
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

/** What a response says of its certificate: the same text means the same signed content. */
function stateOf(status: OcspAnswer['status']): string {
  return status.kind === 'revoked'
    ? `revoked:${status.entry.revokedAt.getTime()}:${status.entry.reason}`
    : status.kind;
}
