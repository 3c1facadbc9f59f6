export { CertificateAuthority } from './certificate-authority';
export { bootstrapCaHierarchy } from './bootstrap';
export { findCaKey } from './ca-keys';
export {
  AlreadyCertifiedError,
  AssertionAlreadyUsedError,
  BadCsrError,
  CaNotReadyError,
  CsrSignatureInvalidError,
  KeyMismatchError,
  PublicKeyAlreadyCertifiedError,
  PublicKeyNotCanonicalError,
  RequestUnknownError,
  SerialCollisionError,
  SignerMismatchError,
} from './errors';
export { OcspResponder } from './ocsp-responder';
export { TimeStampAuthority } from './time-stamp-authority';
export { checkRevocations, type RevocationCheck } from './revocation-check';
export {
  RevocationAuthority,
  retireCredentialCertificate,
  revokeCertificate,
  revokeRequestCertificate,
} from './revocation-authority';
