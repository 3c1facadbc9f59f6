// shared: algorithms, the HSM port, errors and client codes, retries
export {
  defaultSignatureAlgorithm,
  DIGEST_ALGORITHMS,
  DIGEST_LENGTH,
  type DigestAlgorithm,
  fits,
  isKeyType,
  KEY_TYPE_SPECS,
  KEY_TYPES,
  type KeyType,
  nodeHashName,
  SIGNATURE_ALGORITHMS,
  type SignatureAlgorithm,
  signatureAlgorithmsFor,
} from './shared/algorithms';
export {
  type GeneratedKeyPair,
  type GenerateOptions,
  type Hsm,
  HsmBusyError,
  HsmError,
  HsmKeyNotExtractableError,
  HsmKeyNotFoundError,
  HsmLoginError,
  HsmSessionError,
  HsmTokenNotFoundError,
  HsmUnwrapError,
  type KeyAttributes,
  type PrivateKeyRef,
  type SignOptions,
} from './shared/hsm';
export { errorCode, isTransient, PipelineError, type PipelineErrorOptions } from './shared/errors';
export {
  CLIENT_CODES,
  type ClientCode,
  type ClientCodeName,
  type HttpErrorCode,
  httpStatusOf,
  messageOf,
} from './shared/client-codes';
export { backoffDelay, sleep } from './shared/backoff';
export { retryTransient } from './shared/retry';
export { Coalescer, type CoalescerOptions, type Settled } from './shared/coalescer';
export { ADES_PROFILES, type AdesProfile, type SignatureFormat } from './shared/formats';
// signing: the request, its states and one attempt
export {
  DEFAULT_SIGNATURE_LEVEL,
  levelAtLeast,
  REQUEST_ID_PATTERN,
  type RequestError,
  SIGNATURE_LEVELS,
  type SignatureLevel,
  type SigningStage,
  type SignRequestRecord,
} from './signing/sign-request';
export {
  decideDelivery,
  type FailedResult,
  isTerminal,
  requestExpiresAt,
  type SignedResult,
  type SignRequestStore,
  type StartAttempt,
  type StoredSignRequest,
} from './signing/request-state';
export type { CertificateRevoker, RequestQueue, RequestStore } from './signing/request-intake';
export {
  type CsrBuilder,
  processSignRequest,
  requestErrorFor,
  type SigningDeps,
  type SignOutcome,
} from './signing/signing';
export {
  AttemptSupersededError,
  KeyUnavailableError,
  RequestInProgressError,
  RequestNotFoundError,
} from './signing/signing-errors';
export type {
  ContainerBuilder,
  TimeStamper,
  ValidationData,
  ValidationDataSource,
} from './signing/signature-container';
export { deliverSignRequest, type DeliveryDeps } from './signing/delivery';
export {
  decideReconcile,
  type OpenRequest,
  type OpenRequestStore,
  type ReconcileDeps,
  reconcileOpenRequests,
  type ReconcileSettings,
  type ReconcileSummary,
} from './signing/reconcile';
// pool: stored keys, key sources, fill and keygen
export {
  type AddKeysResult,
  type EmptyPoolPolicy,
  isKeyUsable,
  keyExpiresAt,
  type KeyPoolStore,
  type PoolStatus,
  type PoolHsm,
  type PoolKey,
  shardVisitOrder,
  shuffle,
} from './pool/pool';
export { keySourceFor } from './pool/key-source';
export {
  admitSignRequest,
  type AdmissionDecision,
  type AdmissionSettings,
  type OpenRequestCounts,
} from './pool/admission';
export { PrefetchingKeyClaimer } from './pool/key-prefetch';
export { type FallbackDecision, FallbackLimiter } from './pool/fallback-limiter';
export {
  InMemoryPoolMetrics,
  type PoolCounterName,
  type PoolGaugeName,
  type PoolMetrics,
} from './pool/pool-metrics';
export { fillPool } from './pool/fill-pool';
export {
  type KeygenCycleDeps,
  type KeygenCycleInput,
  type KeygenDecision,
  type KeygenPolicyName,
  type KeygenResult,
  runKeygenCycle,
} from './pool/keygen-cycle';
export { decideKeygen } from './pool/keygen-policy';
// pki: certificates the CA issues and revokes
export type {
  BatchCertificateIssuer,
  CertificateIssuer,
  IssueCertificateInput,
  IssuedCertificate,
  IssueOutcome,
  ReleaseInput,
} from './pki/certificate-issuer';
export {
  AUTH_CONTEXT_OID,
  CLIENT_VOUCHED_AUTHN_CONTEXT,
  SACI_CONTEXT_TYPE,
  samlAuthContextXml,
  vouchedAttribute,
} from './identity/auth-context';
export {
  type DirectoryStringKind,
  InvalidIdentityError,
  isIsoCountryCode,
  SUBJECT_OIDS,
  subjectAttributes,
  validateSignerIdentity,
} from './identity/certificate-profile';
export {
  type CertificateToRecord,
  type IssuanceLookup,
  type IssuanceRegisters,
  type IssuanceState,
  type IssuedCertificateRecord,
  type IssuedCertificateStore,
  type RecordIssuedResult,
  SerialCollisionError,
} from './pki/certificate-store';
export type { CaCertificates, CaCertificateStore } from './pki/ca-certificates';
export { type CanonicalPublicKey, canonicalPublicKey } from './pki/public-key';
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
} from './pki/revocation';
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
  type ReleaseBatchRequest,
  ReleaseBatchRequestSchema,
  type ReleaseBatchResponse,
  ReleaseBatchResponseSchema,
  type ReleaseItemResult,
  ReleaseItemSchema,
  REVOCATION_REFUSALS,
  type RevokeRequest,
  RevokeRequestSchema,
  type RevokeResponse,
  RevokeResponseSchema,
} from './pki/ca-contract';
// identity, audit, forecast, planning
export {
  type AssertionBinding,
  AssertionError,
  type AssertionErrorCode,
  assertionNonce,
  type AssertionPolicy,
  assertionReplayKey,
  type AssertionReplayStore,
  type AssertionVerifier,
  bindingLines,
  bindingOf,
  checkAssertionClaims,
  checkRequestObjectClaims,
  checkSignApproval,
  type ClaimMapping,
  claimSources,
  expectedApproval,
  type IdentityEvidence,
  IdentityProviderUnavailableError,
  MAX_SIGN_MESSAGE_LENGTH,
  PARAM_SIGN_REQUEST,
  requestObjectReplayKey,
  SCOPE_SIGN,
  SIGN_APPROVAL_TYPE,
  SIGN_MESSAGE_MIME_TYPES,
  SIGN_MESSAGE_TEXT_PATTERN,
  signerFromClaims,
  type SignMessage,
  SignMessageError,
  signMessageHash,
  SWEDISH_CLAIM_MAPPING,
  SWEDISH_OIDC_CLAIMS,
  type AuthenticationContext,
  type SignerIdentity,
  type SubjectField,
  USER_SIGNATURE_CLAIM,
  validateSignMessage,
  type VerifiedAssertion,
  type VerifyOptions,
} from './identity';
export {
  type AnchorCheckOptions,
  type AnchoredCheckpoint,
  AUDIT_CHECKPOINT_HEAD_PK,
  AUDIT_CHECKPOINT_PK,
  AUDIT_HEAD_SK,
  type AuditAnchorStore,
  AuditAppendConflictError,
  AuditCheckpointError,
  AuditEncodingError,
  type AuditEntry,
  auditEntryPk,
  type AuditEvent,
  AuditEventInvalidError,
  auditHeadPk,
  AuditHeadsRewoundError,
  type AuditIssue,
  AuditNotReadyError,
  auditPublicKey,
  type AuditReceipt,
  auditSequenceSk,
  type AuditSigner,
  type AuditSink,
  type AuditStore,
  type AuditVerificationReport,
  buildEntry,
  canonicalCheckpoint,
  canonicalJson,
  type CertificateIssuedEvent,
  type ChainHead,
  checkpointBody,
  type CheckpointSignatureCheck,
  entryHash,
  eventsOf,
  GENESIS_HASH,
  genesisHead,
  hashIds,
  inclusionPath,
  keyUsage,
  type KeyUsageReport,
  merkleRoot,
  parseAuditItems,
  parseCheckpointBody,
  proveReceipt,
  receiptCovers,
  receiptsOf,
  rootFromInclusionPath,
  signatureMadeEvent,
  signCheckpoint,
  type SignedCheckpoint,
  type SignedHead,
  signHead,
  type RequestRevokeOutcome,
  type RevokeOutcome,
  type StoredAuditLog,
  type StoredCheckpoint,
  validateAuditEvent,
  verifyAuditLog,
  verifySignedHead,
} from './audit';
export { type DemandHistory, forecast, type Forecast, HOUR_MS, type KnownEvent } from './forecast';
export { plan } from './planning';
