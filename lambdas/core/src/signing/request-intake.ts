/**
 * The ports through which the API takes sign requests in: stores a new request, queues it for the signer,
 * and has the CA register (and revoke) it. The adapters implement them; the API and the handler that wires
 * it use them.
 */
import type { AuditReceipt } from '../audit';
import type { RevocationReason } from '../pki/revocation';
import type { SignRequestRecord } from './sign-request';

/** New sign requests as the API stores them (implemented by the DynamoDB RequestRepository). */
export interface RequestStore {
  /** Creates the record unless one with its id exists; returns false when it already existed. */
  create(record: SignRequestRecord): Promise<boolean>;
  get(id: string): Promise<SignRequestRecord | undefined>;
  /** Removes a record that never reached the queue (only while still `received`). */
  discard(id: string): Promise<void>;
}

/** The sign request queue as the API feeds it (implemented by the SQS adapter). */
export interface RequestQueue {
  enqueue(id: string): Promise<void>;
  depth(): Promise<{ readonly visible: number; readonly inFlight: number }>;
}

/**
 * Revokes certificates through the CA's revocation function (the only writer of revocations), which
 * decides on its own records: the certificate it issued for the request, and the client it recorded the
 * request id to. The request record's serial and client are never what it revokes by.
 */
export interface CertificateRevoker {
  /**
   * Records the request id as the client's with the CA, before the request is stored: false when another
   * client registered it first. Throws when the CA cannot be reached.
   */
  registerRequestOwner(requestId: string, clientId: string): Promise<boolean>;
  /**
   * Revokes the request's certificate if the CA has the request as this client's (`not-owned` otherwise)
   * and issued one (`unknown` otherwise). Throws when the CA cannot be reached.
   */
  revokeRequest(
    requestId: string,
    reason: RevocationReason,
    clientId: string,
  ): Promise<
    | {
        outcome: 'revoked' | 'already-revoked';
        serialHex: string;
        reason: string;
        revokedAt: number;
        receipt?: AuditReceipt;
      }
    | { outcome: 'not-owned' }
    | { outcome: 'unknown' }
  >;
}
