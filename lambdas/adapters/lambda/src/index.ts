export * from './batching-certificate-issuer';
export * from './errors';
export * from './lambda-certificate-issuer';
export * from './lambda-certificate-revoker';
