import type { KeyObject } from 'node:crypto';
import {
  verifyAuditLog,
  type AuditStore,
  type AuditVerificationReport,
  type CheckpointSignatureCheck,
} from '../../core/src';

/** Reads the whole log from the store and verifies it. */
export async function verifyAuditStore(
  store: Pick<AuditStore, 'readAll'>,
  chains: number,
  publicKey: KeyObject | CheckpointSignatureCheck | undefined,
): Promise<AuditVerificationReport> {
  return verifyAuditLog({ ...(await store.readAll()), chains }, publicKey);
}

/** Human-readable report lines (the CLI prints these). */
export function formatReport(report: AuditVerificationReport): string[] {
  const summary =
    `${report.entries} entries in ${report.chains} chains, ${report.checkpoints} checkpoints` +
    (report.lastCheckpoint === undefined
      ? ''
      : ` (last valid: ${report.lastCheckpoint}; ${report.entriesAfterLastCheckpoint} entries after it)`);
  if (report.intact) return [`intact: ${summary}`];
  return [
    `TAMPERED: ${report.issues.length} issue(s); ${summary}`,
    ...report.issues.map((i) => {
      const where =
        i.chain === undefined
          ? i.sequence === undefined
            ? 'log'
            : `checkpoint ${i.sequence}`
          : `chain ${i.chain} sequence ${i.sequence ?? '?'}`;
      return `  ${where}: ${i.kind}: ${i.detail}`;
    }),
  ];
}
