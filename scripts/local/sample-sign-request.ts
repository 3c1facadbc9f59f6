/**
 * For tests over the local environment: a valid `received` sign request record (EC-P256, ECDSA,
 * SHA-256, a random digest), with overrides, carrying an identity assertion for its signer bound to it
 * (from the direct identity provider, which a CA under test trusts). The identity is fictitious and
 * passes the certificate profile.
 */
import { createHash, randomUUID } from 'node:crypto';
import { nodeHashName } from '@pipeline/core/shared';
import type { SignRequestRecord } from '@pipeline/core/signing';
import { directAssertion } from './idp/direct-assertions';

export const SAMPLE_SIGNER: SignRequestRecord['signer'] = {
  commonName: 'Tove Test',
  givenName: 'Tove',
  surname: 'Test',
  serialNumber: '197001019999',
  country: 'SE',
};

export function sampleSignRequestRecord(overrides: Partial<SignRequestRecord> = {}): SignRequestRecord {
  const now = Date.now();
  const digestAlgorithm = overrides.digestAlgorithm ?? 'SHA-256';
  const record: SignRequestRecord = {
    id: randomUUID(),
    clientId: 'test-client',
    status: 'received',
    digest: createHash(nodeHashName(digestAlgorithm)).update(randomUUID()).digest('base64'),
    digestAlgorithm,
    keyType: 'EC-P256',
    signatureAlgorithm: 'ECDSA',
    signer: SAMPLE_SIGNER,
    receivedAt: now,
    expiresAt: Math.floor(now / 1000) + 3600,
    ...overrides,
  };
  return 'identityAssertion' in overrides
    ? record
    : { ...record, identityAssertion: directAssertion(record) };
}
