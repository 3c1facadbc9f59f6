/**
 * proveReturnedSignatures: a receipt proves every signature a request returned (each document's in a
 * `documents` request) from its one entry, and nothing the entry does not hold.
 */
import { randomBytes } from 'node:crypto';
import {
  proveReceipt,
  proveReturnedSignatures,
  signatureMadeEvent,
  type AuditEvent,
  type ReturnedSignature,
} from '@pipeline/core/audit';
import { AuditLog } from '../src';
import { MemoryAuditStore, pad } from '../../test-support/memory-audit-store';
import { eventsFor, fakeSigner } from './helpers';

const spki = randomBytes(91);

/** One attempt of request `id`: a signature per document (or one without documents), appended in one entry. */
async function signed(id: string, documents: number | undefined) {
  const store = new MemoryAuditStore();
  const { signer, check } = fakeSigner();
  const log = new AuditLog(store, { chains: 2, signer });
  await log.appendMany(eventsFor(1)); // another request's entry before it
  const returned: ReturnedSignature[] = Array.from({ length: documents ?? 1 }, (_, i) => ({
    signature: randomBytes(64),
    ...(documents === undefined ? {} : { documentIndex: i }),
  }));
  const events: AuditEvent[] = [
    { type: 'pool.key-claimed', keyId: 'key-a', requestId: id },
    ...returned.map((r) =>
      signatureMadeEvent({
        requestId: id,
        publicKeySpki: spki,
        keyId: 'key-a',
        ...r,
      }),
    ),
    { type: 'pool.key-destroyed', keyId: 'key-a', requestId: id },
  ];
  const receipts = await log.appendMany(events);
  // The signer hands out the receipt of its first signature.made.
  const proof = proveReceipt(receipts[1], await store.readAll(), check);
  expect(proof.ok).toBe(true);
  return { store, returned, proof, receipts, check };
}

test('one signature: proven by the leaf the receipt names', async () => {
  const { returned, proof } = await signed('req-x', undefined);
  expect(proveReturnedSignatures('req-x', proof, returned)).toEqual({
    ok: true,
    steps: ['leaf: signature.made for req-x, hash of the returned signature'],
  });
  const other = [{ signature: randomBytes(64) }];
  expect(proveReturnedSignatures('req-x', proof, other).ok).toBe(false);
  expect(proveReturnedSignatures('req-y', proof, returned).steps).toEqual([
    'FAILED: the leaf is not a signature.made event of request req-y',
  ]);
});

test('several documents: each returned signature proven by its own signature.made in the entry of the one receipt', async () => {
  const { returned, proof } = await signed('req-d', 3);
  expect(proveReturnedSignatures('req-d', proof, returned)).toEqual({
    ok: true,
    steps: [0, 1, 2].map((i) => `document ${i}: signature.made for req-d, hash of the returned signature`),
  });
  // A document's signature swapped for another, or under another index: that document is not proven.
  const changed = [returned[0], { ...returned[1], signature: randomBytes(64) }, returned[2]];
  const result = proveReturnedSignatures('req-d', proof, changed);
  expect(result.ok).toBe(false);
  expect(result.steps[1]).toBe(
    'FAILED: document 1: no signature.made for req-d in the entry with the hash of the returned signature',
  );
  const moved = [returned[0], { ...returned[2], documentIndex: 1 }, { ...returned[1], documentIndex: 2 }];
  expect(proveReturnedSignatures('req-d', proof, moved).ok).toBe(false);
});

test("an entry whose other events do not hash to the receipt's entry hash proves only the leaf", async () => {
  const { store, returned, receipts, check } = await signed('req-t', 2);
  // The second document's event rewritten in place: the leaf's path still holds, the entry does not.
  const item = store.items.get(`CHAIN#${receipts[1].chain}|${pad(receipts[1].sequence)}`)! as unknown as {
    events: string[];
  };
  const forged = signatureMadeEvent({
    requestId: 'req-t',
    signature: randomBytes(64),
    publicKeySpki: spki,
    documentIndex: 1,
  });
  item.events[2] = JSON.stringify(forged);
  const proof = proveReceipt(receipts[1], await store.readAll(), check);
  expect(proof.entryEvents).toBeUndefined();
  expect(proveReturnedSignatures('req-t', proof, returned)).toEqual({
    ok: false,
    steps: ["FAILED: the entry's events do not hash to the entry hash"],
  });
});

test('a request that returned nothing is not proven', async () => {
  const { proof } = await signed('req-n', undefined);
  expect(proveReturnedSignatures('req-n', proof, []).ok).toBe(false);
});
