export { BatchingCertificateIssuer, type BatchingIssuerOptions } from './batching-certificate-issuer';
export { CertificateAuthorityUnavailableError, CertificateRefusedError } from './errors';
export { LambdaCertificateRevoker } from './lambda-certificate-revoker';
export { TimeStampUnavailableError, ValidationDataUnavailableError } from './errors';
export {
  FunctionTimeStamper,
  HttpTimeStamper,
  ValidationDataCollector,
  type ValidationDataCollectorDeps,
} from './long-term-validation';
