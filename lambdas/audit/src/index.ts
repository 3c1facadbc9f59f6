export { AuditLog } from './audit-log';
export { hsmAuditSigner, loadAuditPublicKey, provisionAuditKey } from './hsm-signer';
export { formatKeyUsage, formatReport, verifyAuditStore } from './verify';
