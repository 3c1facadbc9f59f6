/**
 * What the audit log says about pool keys: which request claimed each key, and any key claimed or used
 * for a signature by more than one request (the "a pool key is used at most once" invariant, checked
 * from the log rather than from the table the signer writes).
 */
import type { AuditEvent, StoredAuditLog } from './types';

/** The events of a stored log, in chain order; entries whose text is not JSON are skipped. */
export function eventsOf(log: StoredAuditLog): AuditEvent[] {
  const events: AuditEvent[] = [];
  for (const chain of [...log.entries.keys()].sort((a, b) => a - b)) {
    for (const entry of log.entries.get(chain) ?? []) {
      for (const text of entry.events ?? []) {
        try {
          events.push(JSON.parse(text) as AuditEvent);
        } catch {
          // Verification names malformed entries; usage analysis only reads well-formed ones.
        }
      }
    }
  }
  return events;
}

export interface KeyUsageReport {
  /** Pool keys claimed, by key id: the requests that claimed or signed with each. */
  readonly requestsByKey: ReadonlyMap<string, readonly string[]>;
  /** Keys tied to more than one request: must be empty. */
  readonly reused: readonly string[];
  readonly claimed: number;
  readonly destroyed: number;
  readonly discarded: number;
  readonly signatures: number;
  readonly certificates: number;
}

export function keyUsage(events: readonly AuditEvent[]): KeyUsageReport {
  const requestsByKey = new Map<string, Set<string>>();
  const tie = (keyId: string, requestId: string | undefined): void => {
    const set = requestsByKey.get(keyId) ?? new Set<string>();
    if (requestId !== undefined) set.add(requestId);
    requestsByKey.set(keyId, set);
  };
  const counts = { claimed: 0, destroyed: 0, discarded: 0, signatures: 0, certificates: 0 };
  for (const event of events) {
    switch (event.type) {
      case 'pool.key-claimed':
        counts.claimed++;
        tie(event.keyId, event.requestId);
        break;
      case 'pool.key-destroyed':
        counts.destroyed++;
        break;
      case 'pool.key-discarded':
        counts.discarded++;
        break;
      case 'signature.made':
        counts.signatures++;
        if (event.keyId !== undefined) tie(event.keyId, event.requestId);
        break;
      case 'certificate.issued':
        counts.certificates++;
        break;
      default:
        break;
    }
  }
  const reused = [...requestsByKey].filter(([, requests]) => requests.size > 1).map(([keyId]) => keyId);
  return {
    requestsByKey: new Map([...requestsByKey].map(([k, v]) => [k, [...v]])),
    reused,
    ...counts,
  };
}
