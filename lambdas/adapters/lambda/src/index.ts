export * from './errors';
export * from './lambda-certificate-issuer';
