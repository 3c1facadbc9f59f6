export { AuditLog } from './audit-log';
export { hsmAuditSigner, loadAuditPublicKey, provisionAuditKey } from './hsm-signer';
export { formatReport, verifyAuditStore } from './verify';
export { createAuditLog } from './create';
