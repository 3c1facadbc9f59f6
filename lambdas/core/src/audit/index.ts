export { canonicalJson } from './canonical';
export { certifications, type CertificationReport } from './certifications';
export {
  auditPublicKey,
  canonicalCheckpoint,
  checkpointBody,
  parseCheckpointBody,
  signCheckpoint,
} from './checkpoint';
export { buildEntry, entryHash, GENESIS_HASH, genesisHead } from './entry';
export {
  AuditAppendConflictError,
  AuditCheckpointError,
  AuditEncodingError,
  AuditEventInvalidError,
  AuditHeadsRewoundError,
  AuditNotReadyError,
} from './errors';
export { hashIds, signatureMadeEvent, validateAuditEvent } from './events';
export { eventsOf, keyUsage, type KeyUsageReport } from './key-usage';
export {
  AUDIT_CHECKPOINT_HEAD_PK,
  AUDIT_CHECKPOINT_PK,
  AUDIT_HEAD_SK,
  auditEntryPk,
  auditHeadPk,
  auditSequenceSk,
  parseAuditItems,
} from './layout';
export { inclusionPaths, merkleRoot, rootFromInclusionPath } from './merkle';
export {
  proveReceipt,
  proveReturnedSignatures,
  receiptCovers,
  receiptsOf,
  type ReturnedSignature,
} from './receipt';
export { signHead, verifySignedHead } from './signed-head';
export type {
  AnchoredCheckpoint,
  AuditAnchorStore,
  AuditEntry,
  AuditEvent,
  AuditIssue,
  AuditReceipt,
  AuditSigner,
  AuditSink,
  AuditStore,
  AuditVerificationReport,
  CarriedAppendResult,
  CarriedWrites,
  CarryingAppendOutcome,
  CarryingAuditSink,
  CertificateIssuedEvent,
  CertificateRevokedEvent,
  ChainHead,
  LoggedCertificateStore,
  LoggedActivation,
  LoggedIssuance,
  LoggedIssuanceResult,
  KeyDiscardReason,
  RequestRevokeOutcome,
  RevokeOutcome,
  SignatureLog,
  SignedCheckpoint,
  SignedHead,
  StoredAuditLog,
  StoredCheckpoint,
} from './types';
export { type AnchorCheckOptions, type CheckpointSignatureCheck, verifyAuditLog } from './verifier';
