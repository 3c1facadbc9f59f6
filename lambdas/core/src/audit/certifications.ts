/**
 * "One approval, one certificate", from the log alone: every request id, identity assertion and public
 * key the CA certified more than once. The CA's registers (a request's certificate, an assertion's use)
 * refuse a second issuance, but whoever can write every table can delete them and replay the login; the
 * log keeps both `certificate.issued` events.
 *
 * One repeat is legitimate, a **superseded pair**: a takeover after a node crash gets a second certificate
 * for the same request once the first is revoked with reason `superseded`. Exactly two issuances of one
 * request id and assertion hash, the earlier one's serial revoked `superseded` for that request. The
 * earlier is the one in the older entry (chains are read in chain order, not in time; on equal entry
 * times, the revoked one).
 */
import type { AuditEvent, StoredAuditLog } from './types';

/** One `certificate.issued` event and the time of the entry that holds it. */
export interface Issuance {
  readonly requestId: string;
  readonly serial: string;
  readonly assertionHash?: string;
  readonly keySpkiHash?: string;
  /** Epoch ms of its entry. */
  readonly at: number;
}

export interface SupersededPair {
  readonly requestId: string;
  /** The first certificate's serial, revoked `superseded`. */
  readonly revokedSerial: string;
  /** The certificate that replaced it. */
  readonly serial: string;
}

/** A request id, assertion hash or public key hash certified more than once, outside a superseded pair. */
export interface RepeatedCertification {
  readonly by: 'request' | 'assertion' | 'key';
  readonly value: string;
  readonly issuances: readonly Pick<Issuance, 'requestId' | 'serial'>[];
}

export interface CertificationReport {
  readonly certificates: number;
  readonly superseded: readonly SupersededPair[];
  /** Must be empty. */
  readonly repeated: readonly RepeatedCertification[];
}

export function certifications(log: StoredAuditLog): CertificationReport {
  const issuances: Issuance[] = [];
  /** serial -> the request ids its `superseded` revocations name. */
  const supersededRevocations = new Map<string, Set<string | undefined>>();
  for (const entries of log.entries.values()) {
    for (const entry of entries) {
      const at = entry.timestamp ?? Number.NaN;
      for (const event of (entry.events ?? []).map(parse)) {
        if (event?.type === 'certificate.issued') {
          const { requestId, serial, assertionHash, keySpkiHash } = event;
          issuances.push({
            requestId,
            serial,
            at,
            ...(assertionHash === undefined ? {} : { assertionHash }),
            ...(keySpkiHash === undefined ? {} : { keySpkiHash }),
          });
        } else if (event?.type === 'certificate.revoked' && event.reason === 'superseded') {
          const names = supersededRevocations.get(event.serial) ?? new Set<string | undefined>();
          supersededRevocations.set(event.serial, names.add(event.requestId));
        }
      }
    }
  }

  const byRequest = groupBy(issuances, (i) => i.requestId);
  const superseded: SupersededPair[] = [];
  for (const [requestId, group] of byRequest) {
    const pair = supersededPair(requestId, group, supersededRevocations);
    if (pair) superseded.push(pair);
  }
  const pairOf = new Set(superseded.map((p) => pairKey(p.revokedSerial, p.serial)));
  const isPair = (group: readonly Issuance[]): boolean =>
    group.length === 2 && pairOf.has(pairKey(group[0].serial, group[1].serial));

  const repeated: RepeatedCertification[] = [];
  const groupings: Array<[RepeatedCertification['by'], Map<string, Issuance[]>]> = [
    ['request', byRequest],
    ['assertion', groupBy(issuances, (i) => i.assertionHash)],
    ['key', groupBy(issuances, (i) => i.keySpkiHash)],
  ];
  for (const [by, groups] of groupings) {
    for (const [value, group] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
      if (group.length < 2 || isPair(group)) continue;
      repeated.push({ by, value, issuances: group.map(({ requestId, serial }) => ({ requestId, serial })) });
    }
  }
  superseded.sort((a, b) => a.requestId.localeCompare(b.requestId));
  return { certificates: issuances.length, superseded, repeated };
}

/** The request's two issuances as a superseded pair, or undefined when they are not one. */
function supersededPair(
  requestId: string,
  group: readonly Issuance[],
  revocations: ReadonlyMap<string, ReadonlySet<string | undefined>>,
): SupersededPair | undefined {
  if (group.length !== 2) return undefined;
  const [a, b] = group;
  if (a.serial === b.serial || a.assertionHash !== b.assertionHash) return undefined;
  const revoked = (i: Issuance): boolean => revocations.get(i.serial)?.has(requestId) ?? false;
  // The earlier by its entry's time; on equal times (or none), the revoked one.
  const aFirst = a.at < b.at || (!(b.at < a.at) && revoked(a));
  const [first, second] = aFirst ? [a, b] : [b, a];
  return revoked(first) ? { requestId, revokedSerial: first.serial, serial: second.serial } : undefined;
}

function groupBy(
  issuances: readonly Issuance[],
  key: (i: Issuance) => string | undefined,
): Map<string, Issuance[]> {
  const groups = new Map<string, Issuance[]>();
  for (const issuance of issuances) {
    const k = key(issuance);
    if (k !== undefined) groups.set(k, [...(groups.get(k) ?? []), issuance]);
  }
  return groups;
}

const pairKey = (x: string, y: string): string => [x, y].sort().join(' ');

function parse(text: string): AuditEvent | undefined {
  try {
    return JSON.parse(text) as AuditEvent;
  } catch {
    return undefined; // verification names malformed entries
  }
}
