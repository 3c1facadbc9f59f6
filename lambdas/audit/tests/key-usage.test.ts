/** keyUsage over a log written through the AuditLog (memory store): reuse is found from the log alone. */
import { createHash } from 'node:crypto';
import { eventsOf, keyUsage, type AuditEvent } from '@pipeline/core/audit';
import { AuditLog, formatKeyUsage } from '../src';
import { MemoryAuditStore } from '../../test-support/memory-audit-store';
import { eventsFor } from './helpers';

async function logOf(events: readonly AuditEvent[]): Promise<AuditEvent[]> {
  const store = new MemoryAuditStore();
  await new AuditLog(store, { chains: 3 }).appendMany(events);
  return eventsOf(await store.readAll());
}

test('a clean log: every key tied to one request, counts per event type', async () => {
  const usage = keyUsage(await logOf(Array.from({ length: 20 }, (_, i) => eventsFor(i)).flat()));
  expect(usage).toMatchObject({ claimed: 20, destroyed: 20, signatures: 20, certificates: 20, reused: [] });
  expect(usage.requestsByKey.get('key-7')).toEqual(['req-7']);
});

test('a key claimed by one request and used for another request’s signature is reported as reused', async () => {
  const events = [...eventsFor(1), ...eventsFor(2)].map((e) =>
    e.type === 'signature.made' && e.requestId === 'req-2' ? { ...e, keyId: 'key-1' } : e,
  );
  const usage = keyUsage(await logOf(events));
  expect(usage.reused).toEqual(['key-1']);
  expect([...(usage.requestsByKey.get('key-1') ?? [])].sort()).toEqual(['req-1', 'req-2']);
});

test('the same request appending its claim twice (a retried append) is not reuse', async () => {
  const claim: AuditEvent = { type: 'pool.key-claimed', keyId: 'key-9', requestId: 'req-9' };
  expect(keyUsage(await logOf([claim, claim])).reused).toEqual([]);
});

test('refused attempts to certify a key again are named: the copy, the re-encoded copies, where the key was certified', async () => {
  const hash = (s: string): string => createHash('sha256').update(s).digest('hex');
  const key = hash('canonical spki of key-1');
  const events: AuditEvent[] = [
    { type: 'pool.key-claimed', keyId: 'key-1', requestId: 'req-1' },
    {
      type: 'certificate.issued',
      requestId: 'req-1',
      serial: '0a1b',
      subjectHash: hash('a'),
      keySpkiHash: key,
    },
    {
      type: 'signature.made',
      requestId: 'req-1',
      signatureHash: hash('s1'),
      keySpkiHash: key,
      keyId: 'key-1',
    },
    // The bundle put back: the CA refuses the key it certified.
    { type: 'pool.key-claimed', keyId: 'key-1', requestId: 'req-2' },
    {
      type: 'certificate.refused',
      requestId: 'req-2',
      code: 'PUBLIC_KEY_ALREADY_CERTIFIED',
      keySpkiHash: key,
    },
    { type: 'pool.key-discarded', keyId: 'key-1', reason: 'already-certified', requestId: 'req-2' },
    // The same key re-encoded under a new id: the signer refuses it unused.
    { type: 'pool.key-claimed', keyId: 'copy-1', requestId: 'req-3' },
    {
      type: 'pool.key-discarded',
      keyId: 'copy-1',
      reason: 'public-key-not-canonical',
      requestId: 'req-3',
      keySpkiHash: key,
    },
    // A re-encoded CSR at the CA, of a key never certified; a refusal of another kind is not named.
    {
      type: 'certificate.refused',
      requestId: 'req-4',
      code: 'PUBLIC_KEY_NOT_CANONICAL',
      keySpkiHash: hash('b'),
    },
    { type: 'certificate.refused', requestId: 'req-5', code: 'SIGNER_MISMATCH', keySpkiHash: hash('c') },
  ];
  const usage = keyUsage(await logOf(events));
  expect(usage.reused).toEqual([]);
  expect(usage.keyAttempts).toEqual([
    {
      code: 'PUBLIC_KEY_ALREADY_CERTIFIED',
      by: 'ca',
      requestId: 'req-2',
      keySpkiHash: key,
      certified: { requestId: 'req-1', serial: '0a1b' },
    },
    {
      code: 'PUBLIC_KEY_NOT_CANONICAL',
      by: 'signer',
      keyId: 'copy-1',
      requestId: 'req-3',
      keySpkiHash: key,
      certified: { requestId: 'req-1', serial: '0a1b' },
    },
    { code: 'PUBLIC_KEY_NOT_CANONICAL', by: 'ca', requestId: 'req-4', keySpkiHash: hash('b') },
  ]);
  const lines = formatKeyUsage(usage);
  expect(lines[0]).toBe('keys: 3 pool keys claimed, 1 signatures, 1 certificates, 3 certifications refused');
  expect(lines.slice(1)).toEqual([
    `  refused: key ${key.slice(0, 16)}, certified for request req-1 (serial 0a1b), presented again for request req-2: PUBLIC_KEY_ALREADY_CERTIFIED by the CA`,
    `  refused: key ${key.slice(0, 16)}, certified for request req-1 (serial 0a1b), presented re-encoded (not its canonical encoding) stored as pool key copy-1 for request req-3: PUBLIC_KEY_NOT_CANONICAL by the signer`,
    `  refused: key ${hash('b').slice(0, 16)}, presented re-encoded (not its canonical encoding) for request req-4: PUBLIC_KEY_NOT_CANONICAL by the CA`,
  ]);
});

test('a clean log says so in one line; a reused key is named with its requests', async () => {
  const clean = keyUsage(await logOf([...eventsFor(1), ...eventsFor(2)]));
  expect(formatKeyUsage(clean)).toEqual([
    'keys: 2 pool keys claimed, 2 signatures, 2 certificates, 0 certifications refused; each key served one request',
  ]);
  const events = [...eventsFor(1), ...eventsFor(2)].map((e) =>
    e.type === 'signature.made' && e.requestId === 'req-2' ? { ...e, keyId: 'key-1' } : e,
  );
  expect(formatKeyUsage(keyUsage(await logOf(events)))).toContain('  REUSED: key-1: requests req-1, req-2');
});
