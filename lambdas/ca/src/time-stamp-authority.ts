import type { CaConfig } from '@pipeline/config';
import type { Hsm } from '@pipeline/core/shared';
import {
  TimeStampRequestError,
  parseCertificate,
  parseTimeStampRequest,
  pemToDer,
  randomSerial,
  signTimeStampResponse,
  timeStampRejection,
  type CertificateSigner,
} from '@pipeline/der';
import { findCaKey, hsmSigner } from './ca-keys';
import { CaNotReadyError } from './errors';
import type { CaCertificates } from '@pipeline/core/pki';

export type TimeStampAuthorityConfig = Pick<
  CaConfig,
  'tsaKeyLabel' | 'tsaKeyType' | 'tsaPolicyOid' | 'tsaAccuracySeconds'
>;

export interface TimeStampAuthorityDeps {
  /** A login that reaches the TSA's key (and, where the HSM allows, nothing else). */
  readonly hsm: Pick<Hsm, 'findPrivateKey' | 'findPublicKeySpki' | 'signDigest'>;
  readonly caCertificates: CaCertificates;
  readonly config: TimeStampAuthorityConfig;
  /** Epoch ms; default Date.now. */
  readonly now?: () => number;
}

export interface TimeStampResult {
  /** The TimeStampResp, DER: granted with a token, or a rejection. */
  readonly der: Buffer;
  readonly granted: boolean;
  /** For a rejection: the RFC 3161 failure. */
  readonly failure?: string;
}

/**
 * The RFC 3161 time-stamping authority. It holds only the TSA key. Every token names the TSA policy,
 * states its accuracy, carries a random 128-bit serial (unique without coordination between instances)
 * and echoes the request's nonce. Its clock is checked before each token: never before the time of the
 * previous token it made, never outside its certificate's validity; a clock that fails the check gets
 * `timeNotAvailable` instead of a token with a wrong time.
 */
export class TimeStampAuthority {
  private readonly now: () => number;
  private lastGenTime = 0;
  /** HSM signatures made (for metrics and tests). */
  public signatures = 0;

  private constructor(
    private readonly deps: TimeStampAuthorityDeps,
    private readonly signer: CertificateSigner,
    private readonly certificateDer: Buffer,
    private readonly validity: { readonly from: number; readonly to: number },
  ) {
    this.now = deps.now ?? Date.now;
  }

  /** Checks the TSA key on the token matches its certificate. */
  public static async create(deps: TimeStampAuthorityDeps): Promise<TimeStampAuthority> {
    const { caCertificates, config } = deps;
    if (!caCertificates.tsaPem) {
      throw new CaNotReadyError('no time-stamping authority certificate: run the CA bootstrap');
    }
    const der = pemToDer(caCertificates.tsaPem);
    const certificate = parseCertificate(der);
    const key = await findCaKey(deps.hsm as Hsm, config.tsaKeyLabel, config.tsaKeyType);
    if (!key || !key.spki.equals(certificate.subjectPublicKeySpki)) {
      throw new CaNotReadyError(`the key ${config.tsaKeyLabel} does not match the TSA certificate`);
    }
    return new TimeStampAuthority(
      deps,
      hsmSigner(deps.hsm as Hsm, key, certificate, config.tsaKeyType),
      der,
      { from: certificate.notBefore.getTime(), to: certificate.notAfter.getTime() },
    );
  }

  /** The response to a TimeStampReq (DER): always a TimeStampResp, a rejection for what it refuses. */
  public async respond(requestDer: Buffer): Promise<TimeStampResult> {
    let request: ReturnType<typeof parseTimeStampRequest>;
    try {
      request = parseTimeStampRequest(requestDer);
      if (request.policy && request.policy !== this.deps.config.tsaPolicyOid) {
        throw new TimeStampRequestError('unacceptedPolicy', 'this TSA issues under one policy only');
      }
    } catch (err) {
      if (err instanceof TimeStampRequestError) return this.reject(err.failure, err.message);
      throw err;
    }
    const now = this.now();
    // Whole seconds: what the token states (its accuracy covers the truncation).
    const genTime = Math.floor(now / 1000) * 1000;
    if (genTime < this.lastGenTime || now < this.validity.from || now > this.validity.to) {
      return this.reject('timeNotAvailable', 'the time source is not trustworthy now');
    }
    this.lastGenTime = genTime;
    this.signatures++;
    const der = await signTimeStampResponse({
      request,
      policy: this.deps.config.tsaPolicyOid,
      serial: randomSerial(),
      genTime: new Date(genTime),
      accuracySeconds: this.deps.config.tsaAccuracySeconds,
      tsaCertificateDer: this.certificateDer,
      signer: this.signer,
    });
    return { der, granted: true };
  }

  private reject(failure: TimeStampRequestError['failure'], reason: string): TimeStampResult {
    return { der: timeStampRejection(failure, reason), granted: false, failure };
  }
}
