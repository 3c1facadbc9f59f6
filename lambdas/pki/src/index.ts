export { buildCsr, verifyCsr } from './csr';
export { keyTypeOfSpki } from './algorithms';
export { encodeName } from './name';
export { derChildren, pem, pemToDer } from './der';
export * from './cms';
export * from './ess';
export * from './errors';
export type * from './types';
export {
  caExtensions,
  keyIdentifier,
  leafExtensions,
  ocspSignerExtensions,
  tsaExtensions,
  nameDer,
  parseCertificate,
  randomSerial,
  signCertificate,
  type CertificateSigner,
  type ParsedCertificate,
} from './certificate';
export * from './crl';
export * from './ocsp';
export * from './tsp';
