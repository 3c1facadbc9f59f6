export { BatchingCertificateIssuer } from './batching-certificate-issuer';
export { LambdaCertificateRevoker } from './lambda-certificate-revoker';
export { LambdaFunction } from './lambda-function';
export { FunctionTimeStamper, HttpTimeStamper, ValidationDataCollector } from './long-term-validation';
export { CertificateRefusedError } from './errors';
