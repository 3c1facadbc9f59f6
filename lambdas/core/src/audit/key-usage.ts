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
  /**
   * Pool keys by key id, and every signing key by `spki:<SHA-256 of its public key>`: the requests that
   * claimed, signed with, or had certified each. A key id is the table's word; the public key's hash is
   * what the HSM signed with and the CA certified, so a copy stored under a new id shows too.
   */
  readonly requestsByKey: ReadonlyMap<string, readonly string[]>;
  /** Keys used (claimed and kept, signed with, certified) for more than one request: must be empty. */
  readonly reused: readonly string[];
  /**
   * Pool key ids claimed by more than one request: a restored or copied pool item. Not a reuse as long as
   * every later claim discarded the key (the CA refuses a public key it certified before).
   */
  readonly reclaimed: readonly string[];
  readonly claimed: number;
  readonly destroyed: number;
  readonly discarded: number;
  readonly signatures: number;
  readonly certificates: number;
  /** Certifications the CA refused (forged or altered requests, replayed assertions, copied keys). */
  readonly refused: number;
  /**
   * Every refused attempt to have a key certified again: a copy of a certified key (the CA's
   * `PUBLIC_KEY_ALREADY_CERTIFIED`), or any key stored or presented in another encoding than its
   * canonical one (`PUBLIC_KEY_NOT_CANONICAL`, by the CA or the signer). In log order.
   */
  readonly keyAttempts: readonly RefusedKeyAttempt[];
}

/** One refused attempt to certify a key again, named by what the log holds. */
export interface RefusedKeyAttempt {
  /** The request it was presented for. */
  readonly requestId?: string;
  readonly code: 'PUBLIC_KEY_ALREADY_CERTIFIED' | 'PUBLIC_KEY_NOT_CANONICAL';
  /** Who refused it: the CA, or the signer before the HSM did any work (a pool key stored re-encoded). */
  readonly by: 'ca' | 'signer';
  /** SHA-256 of the key's canonical SubjectPublicKeyInfo (absent: the stored bytes are no key at all). */
  readonly keySpkiHash?: string;
  /** The pool key id it was stored under (signer refusals). */
  readonly keyId?: string;
  /** The request and serial the log shows the key was certified for, when it was. */
  readonly certified?: { readonly requestId: string; readonly serial: string };
}

const KEY_REFUSALS: ReadonlySet<string> = new Set([
  'PUBLIC_KEY_ALREADY_CERTIFIED',
  'PUBLIC_KEY_NOT_CANONICAL',
]);

/**
 * The one request each one-time credential was released to (`credential.activated`), as a use of the
 * credential's own: its creating request certified the key, that request signed with it. A second
 * release of the same credential is not followed, so its signatures show as a reuse.
 */
function activationsOf(events: readonly AuditEvent[]): Map<string, string> {
  const released = new Map<string, string>();
  const byCredential = new Map<string, string>();
  for (const event of events) {
    if (event.type !== 'credential.activated') continue;
    const first = byCredential.get(event.credentialRequestId);
    if (first !== undefined && first !== event.requestId) continue;
    byCredential.set(event.credentialRequestId, event.requestId);
    released.set(event.requestId, event.credentialRequestId);
  }
  return released;
}

export function keyUsage(events: readonly AuditEvent[]): KeyUsageReport {
  const uses = new Map<string, Set<string>>();
  const claims = new Map<string, Set<string>>();
  const discarded = new Set<string>();
  const activations = activationsOf(events);
  const tie = (map: Map<string, Set<string>>, keyId: string, requestId: string | undefined): void => {
    const set = map.get(keyId) ?? new Set<string>();
    if (requestId !== undefined) set.add(activations.get(requestId) ?? requestId);
    map.set(keyId, set);
  };
  const counts = { claimed: 0, destroyed: 0, discarded: 0, signatures: 0, certificates: 0, refused: 0 };
  const certifiedAs = new Map<string, { requestId: string; serial: string }>();
  const attempts: Array<Omit<RefusedKeyAttempt, 'certified'>> = [];
  for (const event of events) {
    switch (event.type) {
      case 'pool.key-claimed':
        counts.claimed++;
        tie(claims, event.keyId, event.requestId);
        break;
      case 'pool.key-destroyed':
        counts.destroyed++;
        break;
      case 'pool.key-discarded':
        counts.discarded++;
        discarded.add(`${event.keyId} ${event.requestId ?? ''}`);
        if (event.reason === 'public-key-not-canonical') {
          attempts.push({
            code: 'PUBLIC_KEY_NOT_CANONICAL',
            by: 'signer',
            keyId: event.keyId,
            ...(event.requestId === undefined ? {} : { requestId: event.requestId }),
            ...(event.keySpkiHash === undefined ? {} : { keySpkiHash: event.keySpkiHash }),
          });
        }
        break;
      case 'signature.made':
        counts.signatures++;
        if (event.keyId !== undefined) tie(uses, event.keyId, event.requestId);
        tie(uses, `spki:${event.keySpkiHash}`, event.requestId);
        break;
      case 'certificate.issued':
        counts.certificates++;
        if (event.keySpkiHash !== undefined) {
          tie(uses, `spki:${event.keySpkiHash}`, event.requestId);
          if (!certifiedAs.has(event.keySpkiHash)) {
            certifiedAs.set(event.keySpkiHash, { requestId: event.requestId, serial: event.serial });
          }
        }
        break;
      case 'certificate.refused':
        counts.refused++;
        if (KEY_REFUSALS.has(event.code)) {
          attempts.push({
            code: event.code as RefusedKeyAttempt['code'],
            by: 'ca',
            requestId: event.requestId,
            keySpkiHash: event.keySpkiHash,
          });
        }
        break;
      default:
        break;
    }
  }
  // A claim is a use unless the claiming request threw the key away unused (its discard event).
  for (const [keyId, requests] of claims) {
    for (const requestId of requests) {
      if (!discarded.has(`${keyId} ${requestId}`)) tie(uses, keyId, requestId);
    }
  }
  const reused = [...uses].filter(([, requests]) => requests.size > 1).map(([keyId]) => keyId);
  const reclaimed = [...claims].filter(([, requests]) => requests.size > 1).map(([keyId]) => keyId);
  const keyAttempts = attempts.map((a): RefusedKeyAttempt => {
    const certified = a.keySpkiHash === undefined ? undefined : certifiedAs.get(a.keySpkiHash);
    return certified ? { ...a, certified } : a;
  });
  return {
    requestsByKey: new Map([...uses].map(([k, v]) => [k, [...v]])),
    reused,
    reclaimed,
    ...counts,
    keyAttempts,
  };
}
