export { BatchingCertificateIssuer, type BatchingIssuerOptions } from './batching-certificate-issuer';
export { CertificateAuthorityUnavailableError, CertificateRefusedError } from './errors';
export { LambdaCertificateRevoker } from './lambda-certificate-revoker';
export { LambdaFunction, type Invocation } from './lambda-function';
