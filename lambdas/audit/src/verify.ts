import type { KeyObject } from 'node:crypto';
import {
  verifyAuditLog,
  type AnchorCheckOptions,
  type AuditStore,
  type AuditVerificationReport,
  type CertificationReport,
  type CheckpointSignatureCheck,
  type KeyUsageReport,
  type StoredAuditLog,
} from '@pipeline/core/audit';

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

const short = (hash: string | undefined): string => (hash === undefined ? 'no key' : hash.slice(0, 16));

/**
 * Human-readable lines on the keys the log names: any key used for more than one request (the "one key,
 * one signature" invariant broken), and every refused attempt to have a key certified again (a copy of a
 * certified key, or a key re-encoded to look new), with the request and serial it was certified for.
 */
export function formatKeyUsage(usage: KeyUsageReport): string[] {
  const { keyAttempts, reused } = usage;
  const summary =
    `${usage.claimed} pool keys claimed, ${usage.signatures} signatures, ${usage.certificates} certificates, ` +
    `${usage.refused} certifications refused`;
  if (reused.length === 0 && keyAttempts.length === 0)
    return [`keys: ${summary}; each key served one request`];
  const lines = [`keys: ${summary}`];
  for (const key of reused) {
    lines.push(`  REUSED: ${key}: requests ${(usage.requestsByKey.get(key) ?? []).join(', ')}`);
  }
  for (const a of keyAttempts) {
    const where = a.keyId === undefined ? '' : ` stored as pool key ${a.keyId}`;
    const what = a.code === 'PUBLIC_KEY_NOT_CANONICAL' ? 're-encoded (not its canonical encoding)' : 'again';
    const before = a.certified
      ? `, certified for request ${a.certified.requestId} (serial ${a.certified.serial})`
      : '';
    lines.push(
      `  refused: key ${short(a.keySpkiHash)}${before}, presented ${what}${where} for request ` +
        `${a.requestId ?? '?'}: ${a.code} by the ${a.by === 'ca' ? 'CA' : 'signer'}`,
    );
  }
  return lines;
}

/**
 * Human-readable lines on the certificates the log names: every request id, identity assertion and public
 * key certified more than once (one approval, two certificates), and the superseded pairs (a takeover's
 * replacement after the certificate before it was revoked `superseded`), which are not a failure.
 */
export function formatCertifications(report: CertificationReport): string[] {
  const pairs = report.superseded.length;
  const summary =
    `certificates: ${report.certificates} issued` +
    (pairs === 0 ? '' : `, ${pairs} superseded pair${pairs === 1 ? '' : 's'}`);
  const lines = [
    report.repeated.length === 0 ? `${summary}; each request, assertion and key certified once` : summary,
  ];
  for (const p of report.superseded) {
    lines.push(
      `  superseded: request ${p.requestId}: serial ${p.revokedSerial} revoked (superseded), replaced by serial ${p.serial}`,
    );
  }
  for (const r of report.repeated) {
    const what = r.by === 'request' ? `request ${r.value}` : `${r.by} ${r.value}`;
    const serials = r.issuances.map((i) => `${i.serial} (request ${i.requestId})`).join(', ');
    lines.push(`  CERTIFIED ${r.issuances.length} TIMES: ${what}: serials ${serials}`);
  }
  return lines;
}
