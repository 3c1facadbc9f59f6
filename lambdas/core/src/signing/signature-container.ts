import type { DigestAlgorithm, SignatureAlgorithm } from '../shared/algorithms';
import type { AdesProfile } from '../shared/formats';

/** What a signature container is built from, once the one-time key's certificate exists. */
export interface ContainerInput {
  readonly profile: AdesProfile;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** The client's digest of the signed content. */
  readonly messageDigest: Buffer;
  readonly certificatePem: string;
  /** Issuing CA, then root (the container carries the issuing CA; the root stays the relying party's). */
  readonly chainPem: readonly string[];
  readonly signingTime: Date;
}

/** Validation data, DER each: certificates, OCSP responses (OCSPResponse), CRLs. */
export interface ValidationData {
  readonly certificates: readonly Buffer[];
  readonly ocspResponses: readonly Buffer[];
  readonly crls: readonly Buffer[];
}

/** What a container carries beyond B-B, in its unsigned parts. */
export interface ContainerExtras {
  /** B-T: an RFC 3161 token over the signature value (signature-time-stamp attribute). */
  readonly timeStampToken?: Buffer;
  /** B-LT: embedded in the SignedData for CAdES; for PAdES the client writes it into the PDF. */
  readonly validationData?: ValidationData;
}

export interface PreparedContainer {
  /** The digest the one-time key signs (of the container's signed attributes). */
  readonly toBeSigned: Buffer;
  /** The container (DER) around the key's signature of `toBeSigned`. */
  finish(signature: Buffer, extras?: ContainerExtras): Buffer;
}

/** Time-stamps data (a signature value) at a TSA: the RFC 3161 token, DER. */
export interface TimeStamper {
  timeStamp(data: Buffer, algorithm: DigestAlgorithm): Promise<Buffer>;
}

/**
 * Collects what a relying party needs to validate a new signature offline: the chains of the leaf and of
 * the TSA, an OCSP response for the leaf (the one the CA issued it with, else the responder's), and the
 * status of the CA certificates.
 */
export interface ValidationDataSource {
  collect(input: {
    readonly certificatePem: string;
    readonly chainPem: readonly string[];
    readonly timeStampToken: Buffer;
    /** The OCSP response (DER, base64) the CA returned with the certificate, if any. */
    readonly ocspResponse?: string;
  }): Promise<ValidationData>;
}

/** Builds AdES containers (implemented by lambdas/der with the CMS schemas). */
export type ContainerBuilder = (input: ContainerInput) => PreparedContainer;
