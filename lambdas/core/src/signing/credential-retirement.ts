/**
 * One-time credentials never used (docs/csc.md, "Certificate before hash"): once their certificate has
 * expired and no use can still be under way, the certificate is revoked (`cessationOfOperation`) and the
 * wrapped key removed from the creating request. Run by the reconciler.
 */
import { ONE_TIME_CREDENTIAL_VALIDITY_MS } from '../pki/certificate-store';
import type { StoredSignRequest } from './request-state';

/**
 * How long after its certificate's expiry a held credential is retired: longer than a use that started
 * before the expiry can take (the sign queue's five deliveries of 180 s, and the reconciler's requeues),
 * so that no certificate that signed is revoked.
 */
export const CREDENTIAL_RETIREMENT_MARGIN_MS = 30 * 60_000;

/** The request store as the retirement sees it (implemented by the DynamoDB RequestRepository). */
export interface HeldCredentialStore {
  /** Creating requests that still hold a wrapped key, received before `receivedBefore`, at most `limit`. */
  listHeldCredentials(receivedBefore: number, limit: number): Promise<readonly string[]>;
  get(id: string): Promise<StoredSignRequest | undefined>;
  /** Removes the held key (if still `keyId`; undefined: none) and the request from the held list. */
  retireCredential(id: string, keyId: string | undefined): Promise<boolean>;
}

export interface RetirementDeps {
  readonly store: HeldCredentialStore;
  /**
   * Revokes the creating request's certificate, `cessationOfOperation`, unless the CA released it to a
   * request (the revocation function decides on the CA's records: logged, published).
   */
  readonly revoke: (requestId: string) => Promise<void>;
  readonly limit: number;
  readonly clock?: () => number;
}

export interface RetirementSummary {
  readonly examined: number;
  readonly retired: number;
}

export async function retireUnusedCredentials(deps: RetirementDeps): Promise<RetirementSummary> {
  const now = (deps.clock ?? Date.now)();
  const ids = await deps.store.listHeldCredentials(
    now - ONE_TIME_CREDENTIAL_VALIDITY_MS - CREDENTIAL_RETIREMENT_MARGIN_MS,
    deps.limit,
  );
  let retired = 0;
  for (const id of ids) {
    const record = await deps.store.get(id);
    const held = record?.reservedKey;
    if (held && held.usableUntil + CREDENTIAL_RETIREMENT_MARGIN_MS > now) continue;
    // Revoked first: a failure leaves it held, for the next run.
    if (held) await deps.revoke(id);
    if (await deps.store.retireCredential(id, held?.keyId)) retired++;
  }
  return { examined: ids.length, retired };
}
