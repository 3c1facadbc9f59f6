export {
  CREDENTIAL_RETIREMENT_MARGIN_MS,
  retireUnusedCredentials,
  type RetirementDeps,
} from './credential-retirement';
export { deliverSignRequest, type DeliveryDeps } from './delivery';
export { DocumentsError, type SignDocument, validateDocuments } from './documents';
export { type PreparedTask, type SignTaskData, signTaskDigest, type TaskPreparer } from './sign-task';
export {
  decideReconcile,
  type OpenRequest,
  type OpenRequestStore,
  type ReconcileDeps,
  reconcileOpenRequests,
  type ReconcileSettings,
  type ReconcileSummary,
} from './reconcile';
export type { CertificateRevoker, RequestQueue, RequestStore } from './request-intake';
export {
  decideDelivery,
  type FailedResult,
  isTerminal,
  requestExpiresAt,
  type SignedResult,
  type SignRequestStore,
  type StartAttempt,
  type StoredSignRequest,
} from './request-state';
export {
  DEFAULT_SIGNATURE_LEVEL,
  levelAtLeast,
  SIGNATURE_LEVELS,
  type SignatureLevel,
} from '../shared/formats';
export {
  type DocumentResult,
  REQUEST_ID_PATTERN,
  type RequestError,
  type SigningStage,
  type SignRequestRecord,
} from './sign-request';
export type {
  ContainerBuilder,
  TimeStamper,
  ValidationData,
  ValidationDataSource,
} from './signature-container';
export { processSignRequest } from './signing';
export type { CsrBuilder, SigningDeps, SignOutcome } from './signing-deps';
export { requestErrorFor } from './stage-codes';
export {
  AttemptSupersededError,
  KeyUnavailableError,
  RequestInProgressError,
  RequestNotFoundError,
} from './signing-errors';
