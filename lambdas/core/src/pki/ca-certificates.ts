/**
 * The CA certificates and the port of the store that keeps them: owned here so that the adapter that keeps
 * them (a local directory, or SSM parameters in AWS) implements it without importing the CA service.
 */
/** The CA certificates in PEM, as the bootstrap stored them. */
export interface CaCertificates {
  readonly rootPem: string;
  readonly issuingPem: string;
  /** The delegated OCSP responder's certificate (issued by the issuing CA). */
  readonly ocspPem?: string;
  /** The time-stamping authority's certificate (issued by the root). */
  readonly tsaPem?: string;
}

/** Reads and writes the CA certificates (a local directory, or SSM parameters in AWS). */
export interface CaCertificateStore {
  /** Undefined when nothing (or only part of the pair) is stored. */
  read(): Promise<CaCertificates | undefined>;
  /** Whatever is stored, so the bootstrap can keep a root whose issuing certificate went missing. */
  readEach(): Promise<Partial<CaCertificates>>;
  write(certificates: CaCertificates): Promise<void>;
  /** Where, for logs: a path or parameter prefix (never contents). */
  readonly location: string;
}
