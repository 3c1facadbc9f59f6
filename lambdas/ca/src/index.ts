export {
  CertificateAuthority,
  type CaIssuanceConfig,
  type CertificateAuthorityDeps,
} from './certificate-authority';
export { bootstrapCaHierarchy, type CaBootstrapConfig, type CaBootstrapResult } from './bootstrap';
export { caCertificateStore, fileCaCertificateStore, ssmCaCertificateStore } from './ca-certificates';
export { findCaKey, parseCaChain, type CaChain, type CaKey } from './ca-keys';
export * from './errors';
export type * from './types';
export {
  OcspResponder,
  type OcspResponderConfig,
  type OcspResponderDeps,
  type OcspResult,
} from './ocsp-responder';
export {
  TimeStampAuthority,
  type TimeStampAuthorityConfig,
  type TimeStampAuthorityDeps,
  type TimeStampResult,
} from './time-stamp-authority';
export { checkRevocations, type RevocationCheck, type RevocationCheckInput } from './revocation-check';
export {
  RevocationAuthority,
  revokeCertificate,
  type PublishedCrl,
  type RevocationAuthorityDeps,
  type RevocationConfig,
} from './revocation-authority';
