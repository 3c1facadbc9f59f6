export { buildCsr, verifyCsr } from './csr';
export { algorithmIdentifier, digest, keyTypeOfSpki, schemeFor, schemeForOid } from './algorithms';
export { encodeName, type NameAttribute } from './name';
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
  id_kp_documentSigning,
  id_kp_timeStamping,
  nameDer,
  parseCertificate,
  randomSerial,
  signCertificate,
  type CaExtensionOptions,
  type CertificateContent,
  type CertificateSigner,
  type IssuerPointers,
  type LeafExtensionOptions,
  type ParsedCertificate,
} from './certificate';
export * from './crl';
export * from './ocsp';
export * from './tsp';
