/** The CA refused to certify (bad CSR, finished request, invalid identity...): not worth a retry. */
export class CertificateRefusedError extends Error {
  public override readonly name = 'CertificateRefusedError';
  public constructor(
    public readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The CA function could not be reached or crashed: the request may be retried. */
export class CertificateAuthorityUnavailableError extends Error {
  public override readonly name = 'CertificateAuthorityUnavailableError';
  public readonly code = 'CA_UNAVAILABLE';
}

/** The TSA could not be reached or did not give a valid token for what was asked. */
export class TimeStampUnavailableError extends Error {
  public override readonly name = 'TimeStampUnavailableError';
  public readonly code = 'TSA_UNAVAILABLE';
}

/** The OCSP responder or the published CRLs could not give a new signature's validation data. */
export class ValidationDataUnavailableError extends Error {
  public override readonly name = 'ValidationDataUnavailableError';
  public readonly code = 'VALIDATION_DATA_UNAVAILABLE';
}
