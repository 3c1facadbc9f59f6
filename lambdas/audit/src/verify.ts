import type { KeyObject } from 'node:crypto';
import {
  verifyAuditLog,
  type AnchorCheckOptions,
  type AuditStore,
  type AuditVerificationReport,
  type CheckpointSignatureCheck,
  type StoredAuditLog,
} from '@pipeline/core';

/** Reads the whole log from the store (or takes one read already) and verifies it, against anchors if given. */
export async function verifyAuditStore(
  store: Pick<AuditStore, 'readAll'>,
  chains: number,
  publicKey: KeyObject | CheckpointSignatureCheck | undefined,
  options: { anchoring?: AnchorCheckOptions; log?: StoredAuditLog } = {},
): Promise<AuditVerificationReport> {
  return verifyAuditLog(
    { ...(options.log ?? (await store.readAll())), chains },
    publicKey,
    options.anchoring,
  );
}

/** Human-readable report lines (the CLI prints these). */
export function formatReport(report: AuditVerificationReport): string[] {
  const summary =
    `${report.entries} entries in ${report.chains} chains, ${report.checkpoints} checkpoints` +
    (report.lastCheckpoint === undefined
      ? ''
      : ` (last valid: ${report.lastCheckpoint}; ${report.entriesAfterLastCheckpoint} entries after it)`) +
    (report.anchors === undefined
      ? ', no anchors'
      : `, ${report.anchors} anchored${report.lastAnchored === undefined ? '' : ` (last: ${report.lastAnchored})`}`);
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
