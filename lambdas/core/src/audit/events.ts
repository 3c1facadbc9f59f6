/**
 * Event validation and small constructors. Validation is strict on purpose: every field is either a
 * known enum value, a bounded integer, an id of a restricted alphabet (no spaces, so no names), or a hex
 * hash. That keeps personal data and secrets out of the log even when a caller passes the wrong thing.
 */
import { createHash } from 'node:crypto';
import { isKeyType } from '../shared/algorithms';
import { REVOCATION_REASONS, isRevocationReason } from '../pki/revocation';
import type { CanonicalValue } from './canonical';
import { AuditEventInvalidError } from './errors';
import type { AuditEvent, KeyDiscardReason, SignatureMadeEvent, Sha256Hex } from './types';

const ID = /^[A-Za-z0-9._:-]{1,128}$/;
const HASH = /^[0-9a-f]{64}$/;
const SERIAL = /^[0-9a-f]{1,64}$/;
const CODE = /^[A-Z][A-Z0-9_]{1,63}$/;
const DISCARD_REASONS: readonly KeyDiscardReason[] = [
  'expired',
  'unwrap-failed',
  'public-key-mismatch',
  'profile-mismatch',
  'already-certified',
  'public-key-not-canonical',
  'sign-failed',
  'other',
];

/** Checks an event and returns a plain copy with exactly its known fields (extra fields are refused). */
export function validateAuditEvent(event: AuditEvent): AuditEvent & CanonicalValue {
  const e = event as unknown as Record<string, unknown>;
  const fields = (allowed: readonly string[], optional: readonly string[] = []): void => {
    for (const key of Object.keys(e)) {
      if (key !== 'type' && !allowed.includes(key) && !optional.includes(key)) {
        throw new AuditEventInvalidError(key, 'is not a field of this event type');
      }
    }
  };
  const id = (field: string, optional = false): void => check(field, ID, 'must be an id', optional);
  const hash = (field: string): void => check(field, HASH, 'must be a lower-case hex SHA-256');
  const check = (field: string, pattern: RegExp, what: string, optional = false): void => {
    const value = e[field];
    if (optional && value === undefined) return;
    if (typeof value !== 'string' || !pattern.test(value)) throw new AuditEventInvalidError(field, what);
  };
  switch (e.type) {
    case 'pool.batch-generated': {
      fields(['keyType', 'count', 'keyIdsHash']);
      if (!isKeyType(e.keyType)) throw new AuditEventInvalidError('keyType', 'must be a key type');
      const count = e.count;
      if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 1_000_000) {
        throw new AuditEventInvalidError('count', 'must be an integer from 1 to 1000000');
      }
      hash('keyIdsHash');
      break;
    }
    case 'pool.key-claimed':
    case 'pool.key-destroyed':
      fields(['keyId'], ['requestId']);
      id('keyId');
      id('requestId', true);
      break;
    case 'pool.key-discarded':
      fields(['keyId', 'reason'], ['requestId', 'keySpkiHash']);
      id('keyId');
      id('requestId', true);
      if (!DISCARD_REASONS.includes(e.reason as KeyDiscardReason)) {
        throw new AuditEventInvalidError('reason', `must be one of ${DISCARD_REASONS.join(', ')}`);
      }
      if (e.keySpkiHash !== undefined) hash('keySpkiHash');
      break;
    case 'signature.made':
      fields(['requestId', 'signatureHash', 'keySpkiHash'], ['keyId', 'documentIndex']);
      id('requestId');
      id('keyId', true);
      if (
        e.documentIndex !== undefined &&
        !(
          Number.isInteger(e.documentIndex) &&
          (e.documentIndex as number) >= 0 &&
          (e.documentIndex as number) < 50
        )
      ) {
        throw new AuditEventInvalidError('documentIndex', 'must be a document index (0 to 49)');
      }
      hash('signatureHash');
      hash('keySpkiHash');
      break;
    case 'certificate.issued':
      fields(['requestId', 'serial', 'subjectHash'], ['assertionHash', 'keySpkiHash', 'signMessageHash']);
      id('requestId');
      check('serial', SERIAL, 'must be lower-case hex');
      hash('subjectHash');
      if (e.assertionHash !== undefined) hash('assertionHash');
      if (e.keySpkiHash !== undefined) hash('keySpkiHash');
      if (e.signMessageHash !== undefined) hash('signMessageHash');
      break;
    case 'credential.activated':
      fields(['requestId', 'credentialRequestId', 'serial', 'keySpkiHash'], ['assertionHash']);
      id('requestId');
      id('credentialRequestId');
      check('serial', SERIAL, 'must be lower-case hex');
      hash('keySpkiHash');
      if (e.assertionHash !== undefined) hash('assertionHash');
      break;
    case 'certificate.refused':
      fields(['requestId', 'code', 'keySpkiHash'], ['assertionHash', 'serial']);
      id('requestId');
      check('code', CODE, 'must be an error code');
      hash('keySpkiHash');
      if (e.assertionHash !== undefined) hash('assertionHash');
      check('serial', SERIAL, 'must be lower-case hex', true);
      break;
    case 'revocation.restored':
      fields(['serial']);
      check('serial', SERIAL, 'must be lower-case hex');
      break;
    case 'request.refused':
      fields(['requestId', 'code']);
      id('requestId');
      check('code', CODE, 'must be an error code');
      break;
    case 'certificate.revoked':
      fields(['serial', 'reason'], ['requestId']);
      check('serial', SERIAL, 'must be lower-case hex');
      id('requestId', true);
      if (!isRevocationReason(e.reason)) {
        throw new AuditEventInvalidError('reason', `must be one of ${REVOCATION_REASONS.join(', ')}`);
      }
      break;
    default:
      throw new AuditEventInvalidError('type', 'is not an audit event type');
  }
  return { ...e } as unknown as AuditEvent & CanonicalValue;
}

/** SHA-256 (hex) of a batch's key ids joined by "\n" in the given order. */
export function hashIds(ids: readonly string[]): Sha256Hex {
  return createHash('sha256').update(ids.join('\n')).digest('hex');
}

const sha256 = (data: Buffer | string): Sha256Hex => createHash('sha256').update(data).digest('hex');

/**
 * signature.made from the raw values: only their hashes go into the event (for a CMS, of the signature
 * value in its SignerInfo).
 */
export function signatureMadeEvent(input: {
  readonly requestId: string;
  readonly signature: Buffer;
  readonly publicKeySpki: Buffer;
  readonly keyId?: string;
  readonly documentIndex?: number;
}): SignatureMadeEvent {
  return {
    type: 'signature.made',
    requestId: input.requestId,
    signatureHash: sha256(input.signature),
    keySpkiHash: sha256(input.publicKeySpki),
    ...(input.keyId === undefined ? {} : { keyId: input.keyId }),
    ...(input.documentIndex === undefined ? {} : { documentIndex: input.documentIndex }),
  };
}
