export { CertificateAuthority } from './certificate-authority';
export { bootstrapCaHierarchy } from './bootstrap';
export { caCertificateStore, fileCaCertificateStore } from './ca-certificates';
export { findCaKey } from './ca-keys';
export * from './errors';
export type * from './types';
export { OcspResponder } from './ocsp-responder';
export { checkRevocations, type RevocationCheck } from './revocation-check';
export { RevocationAuthority, revokeCertificate } from './revocation-authority';
