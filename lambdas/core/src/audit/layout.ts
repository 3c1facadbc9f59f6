/**
 * The stored layout of the audit log (DynamoDB items, and the memory store that mimics them):
 *
 *   entry             pk = `CHAIN#<n>`        sk = sequence, 12 digits
 *   chain head        pk = `HEAD#<n>`         sk = `HEAD`
 *   checkpoint        pk = `CHECKPOINT`       sk = sequence, 12 digits
 *   checkpoint head   pk = `CHECKPOINT#HEAD`  sk = `HEAD`
 *
 * Parsing is tolerant on purpose: whatever an attacker wrote comes back, for the verifier to name.
 */
import type { StoredAuditEntry, StoredAuditLog, StoredCheckpoint } from './types';

export const AUDIT_HEAD_SK = 'HEAD';
export const AUDIT_CHECKPOINT_PK = 'CHECKPOINT';
export const AUDIT_CHECKPOINT_HEAD_PK = 'CHECKPOINT#HEAD';
export const auditEntryPk = (chain: number): string => `CHAIN#${chain}`;
export const auditHeadPk = (chain: number): string => `HEAD#${chain}`;
/** 12 digits: sorts lexicographically in sequence order up to 10^12 entries per chain. */
export const auditSequenceSk = (sequence: number): string => String(sequence).padStart(12, '0');

/** Sorts raw items (DynamoDB layout) into entries, heads and checkpoints, tolerating any tampering. */
export function parseAuditItems(items: readonly Record<string, unknown>[]): StoredAuditLog {
  const entries = new Map<number, StoredAuditEntry[]>();
  const heads = new Map<number, { sequence?: number; hash?: string }>();
  const checkpoints: StoredCheckpoint[] = [];
  const foreign: string[] = [];
  const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const strings = (v: unknown): string[] | undefined =>
    Array.isArray(v) && v.every((e) => typeof e === 'string') ? (v as string[]) : undefined;
  const position = (sk: string): number | undefined => (/^\d{12}$/.test(sk) ? Number(sk) : undefined);
  for (const item of items) {
    const pk = String(item.pk);
    const sk = String(item.sk);
    const chainMatch = /^(CHAIN|HEAD)#(\d{1,6})$/.exec(pk);
    if (chainMatch?.[1] === 'CHAIN') {
      const chain = Number(chainMatch[2]);
      const list = entries.get(chain) ?? [];
      list.push({
        chain,
        position: position(sk),
        rawPosition: sk,
        entryChain: num(item.chain),
        sequence: num(item.sequence),
        prevHash: str(item.prevHash),
        events: strings(item.events),
        timestamp: num(item.timestamp),
        hash: str(item.hash),
      });
      entries.set(chain, list);
    } else if (chainMatch?.[1] === 'HEAD' && sk === 'HEAD') {
      heads.set(Number(chainMatch[2]), { sequence: num(item.sequence), hash: str(item.hash) });
    } else if (pk === 'CHECKPOINT') {
      const signature = item.signature instanceof Uint8Array ? Buffer.from(item.signature) : undefined;
      checkpoints.push({ position: position(sk), rawPosition: sk, body: str(item.body), signature });
    } else if (!(pk === 'CHECKPOINT#HEAD' && sk === 'HEAD')) {
      foreign.push(`${pk}/${sk}`);
    }
  }
  for (const list of entries.values()) list.sort((a, b) => a.rawPosition.localeCompare(b.rawPosition));
  return { entries, heads, checkpoints, foreign };
}
