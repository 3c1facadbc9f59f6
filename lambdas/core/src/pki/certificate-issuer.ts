/**
 * Port through which the signing core obtains a certificate for a one-time key. Implemented by the CA
 * (in process, or through the Lambda Invoke API by the signer function).
 */
import type { RequestBinding } from '../identity/binding';
import type { SignMessage } from '../identity/sign-message';

export interface IssueCertificateInput {
  readonly requestId: string;
  /** PKCS#10 CSR (DER) signed by the one-time private key: the proof of possession. */
  readonly csrDer: Buffer;
  /**
   * The evidence of who signs (ID token or trusted client's request object), which the CA verifies
   * itself: the certificate's subject comes from it, never from a stored record.
   */
  readonly assertion: string;
  /**
   * What the signer is about to sign: the assertion's nonce must bind exactly this (v2 for one document;
   * for `documents`, the CA recomputes their manifest and the v3 nonce).
   */
  readonly binding: RequestBinding;
  /**
   * The sign message of a request that has one (the binding then names its hash): the CA checks it by the
   * sign message rules and that it is the message the binding names (for `documents`, composed with the
   * list of the binding's documents).
   */
  readonly signMessage?: SignMessage;
  /**
   * The signer's attempt that owns the request: the certificate is released to it at issuance (the
   * request gets no other certificate after it; an attempt that took the request over is refused, or
   * given a replacement when the audit log shows no signature made with the current one).
   */
  readonly attemptId?: string;
  /**
   * Asks for the certificate's OCSP response `good` with it (a request for B-LT): the signer then needs
   * no call to the responder. A first issuance only; best effort.
   */
  readonly ocspResponse?: boolean;
}

export interface IssuedCertificate {
  /** Leaf certificate, PEM. */
  readonly certificatePem: string;
  /** Issuing CA, then root, PEM. */
  readonly chainPem: readonly string[];
  /** Certificate serial number, lower-case hex. */
  readonly serialHex: string;
  /**
   * A first issuance's OCSP response `good` (DER, base64), signed by the OCSP responder's key with the
   * certificate; absent when the CA cannot reach that key or the certificate is not new.
   */
  readonly ocspResponse?: string;
}

export interface CertificateIssuer {
  issue(input: IssueCertificateInput): Promise<IssuedCertificate>;
}

/** One item of a batch: its certificate, or why this item got none (the others are not affected). */
export type IssueOutcome =
  | { readonly ok: true; readonly certificate: IssuedCertificate }
  | { readonly ok: false; readonly error: unknown };

/** Certifies many keys in one call (one invocation, one read, one write for the batch). */
export interface BatchCertificateIssuer {
  issueMany(inputs: readonly IssueCertificateInput[]): Promise<IssueOutcome[]>;
}
