/** keyUsage over a log written through the AuditLog (memory store): reuse is found from the log alone. */
import { eventsOf, keyUsage, type AuditEvent } from '@pipeline/core';
import { AuditLog } from '../src';
import { MemoryAuditStore } from '../src/memory-store';
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
