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
