export type { CaCertificates, CaCertificateStore } from './ca-certificates';
export {
  caRefusal,
  issueBatchRequest,
  IssueBatchRequestSchema,
  type IssueBatchResponse,
  IssueBatchResponseSchema,
  issuedResult,
  issueInputOf,
  type IssueItemResult,
  IssueItemSchema,
  type RegisterResponse,
  RegisterResponseSchema,
  REVOCATION_REFUSALS,
  type RevokeRequest,
  RevokeRequestSchema,
  type RevokeResponse,
  RevokeResponseSchema,
} from './ca-contract';
export type {
  BatchCertificateIssuer,
  CertificateIssuer,
  IssueCertificateInput,
  IssuedCertificate,
  IssueOutcome,
} from './certificate-issuer';
export {
  type CertificateToRecord,
  type IssuanceLookup,
  type IssuanceRegisters,
  type IssuanceState,
  type IssuedCertificateRecord,
  type IssuedCertificateStore,
  type RecordIssuedResult,
  SerialCollisionError,
  type SerialState,
  SUPERSEDED_BY_CA,
} from './certificate-store';
export { type CanonicalPublicKey, canonicalPublicKey, parsedPublicKey } from './public-key';
export { canonicalLayoutKeyType } from './spki-layout';
export {
  type CertificateStatus,
  crossCheckRevocations,
  isRevocationReason,
  mergeRevocations,
  normalizeSerial,
  PKI_OBJECTS,
  type PkiObjectName,
  type PkiPublisher,
  type PublishedRevocations,
  type RequestCertificate,
  type Revocation,
  REVOCATION_REASONS,
  type RevocationDisagreement,
  type RevocationReason,
  type RevocationStore,
  type RevokedEntry,
  type StoredRevokeOutcome,
} from './revocation';
