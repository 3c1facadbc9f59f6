/**
 * "One approval, one certificate", from the log alone: every request id, identity assertion and public
 * key the CA certified more than once. The CA's registers (a request's certificate, an assertion's use)
 * refuse a second issuance, but whoever can write every table can delete them and replay the login; the
 * log keeps both `certificate.issued` events.
 *
 * One repeat is legitimate, a **superseded chain**: a takeover after a node crash gets another
 * certificate for the same request once the current one is revoked with reason `superseded`. Two to
 * 1 + MAX_REPLACEMENTS issuances of one request id and assertion hash, each but the latest with its
 * serial revoked `superseded` for that request; each such link is a superseded pair. Issuances are ordered
 * by their entries' times (chains are read in chain order, not in time; on equal times, revoked first).
 */
import { MAX_REPLACEMENTS } from '../pki/certificate-store';
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

/** One link of a superseded chain. */
export interface SupersededPair {
  readonly requestId: string;
  /** The earlier certificate's serial, revoked `superseded`. */
  readonly revokedSerial: string;
  /** The certificate that replaced it. */
  readonly serial: string;
}

/** A request id, assertion hash or public key hash certified more than once, outside a superseded chain. */
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
  /** serial -> the request whose superseded chain it is in. */
  const chainOf = new Map<string, string>();
  for (const [requestId, group] of byRequest) {
    const links = supersededChain(requestId, group, supersededRevocations);
    if (!links) continue;
    superseded.push(...links);
    group.forEach((i) => chainOf.set(i.serial, requestId));
  }
  // A repeat within one chain (its request, its assertion, a key certified again in it) is no failure.
  const isChain = (group: readonly Issuance[]): boolean =>
    group.every((i) => chainOf.has(i.serial) && chainOf.get(i.serial) === chainOf.get(group[0].serial));

  const repeated: RepeatedCertification[] = [];
  const groupings: Array<[RepeatedCertification['by'], Map<string, Issuance[]>]> = [
    ['request', byRequest],
    ['assertion', groupBy(issuances, (i) => i.assertionHash)],
    ['key', groupBy(issuances, (i) => i.keySpkiHash)],
  ];
  for (const [by, groups] of groupings) {
    for (const [value, group] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
      if (group.length < 2 || isChain(group)) continue;
      repeated.push({ by, value, issuances: group.map(({ requestId, serial }) => ({ requestId, serial })) });
    }
  }
  superseded.sort((a, b) => a.requestId.localeCompare(b.requestId));
  return { certificates: issuances.length, superseded, repeated };
}

/** The links of the request's issuances as a superseded chain, or undefined when they are not one. */
function supersededChain(
  requestId: string,
  group: readonly Issuance[],
  revocations: ReadonlyMap<string, ReadonlySet<string | undefined>>,
): SupersededPair[] | undefined {
  if (group.length < 2 || group.length > 1 + MAX_REPLACEMENTS) return undefined;
  if (new Set(group.map((i) => i.serial)).size !== group.length) return undefined;
  if (group.some((i) => i.assertionHash !== group[0].assertionHash)) return undefined;
  const revoked = (i: Issuance): boolean => revocations.get(i.serial)?.has(requestId) ?? false;
  // By entry time; on equal times (or none), the revoked before the standing one.
  const ordered = [...group].sort((a, b) =>
    a.at < b.at ? -1 : b.at < a.at ? 1 : Number(revoked(b)) - Number(revoked(a)),
  );
  const links = ordered
    .slice(1)
    .map((next, k) => ({ requestId, revokedSerial: ordered[k].serial, serial: next.serial }));
  return ordered.slice(0, -1).every(revoked) ? links : undefined;
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

function parse(text: string): AuditEvent | undefined {
  try {
    return JSON.parse(text) as AuditEvent;
  } catch {
    return undefined; // verification names malformed entries
  }
}
