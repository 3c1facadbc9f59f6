/** Test helpers: a fake audit signer (HMAC over the digest) and event generators. */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuditEvent, AuditSigner, CheckpointSignatureCheck } from '@pipeline/core/audit';

export function fakeSigner(secret: Buffer = randomBytes(32)): {
  signer: AuditSigner;
  check: CheckpointSignatureCheck;
} {
  const mac = (digest: Buffer): Buffer => createHmac('sha384', secret).update(digest).digest();
  return {
    signer: { keyLabel: 'audit-test', algorithm: 'ECDSA-P384-SHA384', sign: async (digest) => mac(digest) },
    check: (body, signature) => {
      const expected = mac(createHash('sha384').update(body, 'utf8').digest());
      return signature.length === expected.length && timingSafeEqual(signature, expected);
    },
  };
}

const hex = (s: string): string => createHash('sha256').update(s).digest('hex');

/** A mix of every event type for request/key number i. */
export function eventsFor(i: number): AuditEvent[] {
  const requestId = `req-${i}`;
  const keyId = `key-${i}`;
  return [
    { type: 'pool.key-claimed', keyId, requestId },
    { type: 'signature.made', requestId, signatureHash: hex(`sig${i}`), keySpkiHash: hex(`spki${i}`), keyId },
    { type: 'pool.key-destroyed', keyId, requestId },
    { type: 'certificate.issued', requestId, serial: (1000 + i).toString(16), subjectHash: hex(`subj${i}`) },
  ];
}
