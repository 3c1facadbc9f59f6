export { AuditLog } from './audit-log';
export { hsmAuditSigner, loadAuditPublicKey, provisionAuditKey } from './hsm-signer';
export { formatCertifications, formatKeyUsage, formatReport, verifyAuditStore } from './verify';
