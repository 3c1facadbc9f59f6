import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AuditEncodingError,
  AuditEventInvalidError,
  GENESIS_HASH,
  canonicalJson,
  entryHash,
  hashIds,
  merkleRoot,
  proveReceipt,
  receiptCovers,
  signatureMadeEvent,
  verifySignedHead,
  type AuditEntry,
  type AuditEvent,
  type CarriedAppendResult,
  type CarriedWrites,
  type ChainHead,
} from '@pipeline/core/audit';
import { fileAnchorStore } from '@pipeline/adapters/anchors';
import { AuditLog, verifyAuditStore } from '../src';
import { MemoryAuditStore } from '../../test-support/memory-audit-store';
import { eventsFor, fakeSigner } from './helpers';

describe('canonical encoding', () => {
  it('sorts keys, drops undefined members and refuses values with unstable text forms', () => {
    expect(canonicalJson({ b: 1, a: ['x', true, null], c: undefined })).toBe('{"a":["x",true,null],"b":1}');
    expect(() => canonicalJson({ a: 1.5 })).toThrow(AuditEncodingError);
    expect(() => canonicalJson({ a: Buffer.from('x') } as never)).toThrow(AuditEncodingError);
  });

  it('entry hashes cover every field', () => {
    const root = merkleRoot(['{"a":1}']);
    const base = entryHash(1, 2, GENESIS_HASH, root, 1, 1000);
    expect(entryHash(0, 2, GENESIS_HASH, root, 1, 1000)).not.toBe(base);
    expect(entryHash(1, 3, GENESIS_HASH, root, 1, 1000)).not.toBe(base);
    expect(entryHash(1, 2, '1'.repeat(64), root, 1, 1000)).not.toBe(base);
    expect(entryHash(1, 2, GENESIS_HASH, merkleRoot(['{"a":2}']), 1, 1000)).not.toBe(base);
    expect(entryHash(1, 2, GENESIS_HASH, root, 2, 1000)).not.toBe(base);
    expect(entryHash(1, 2, GENESIS_HASH, root, 1, 1001)).not.toBe(base);
  });
});

describe('events', () => {
  const log = new AuditLog(new MemoryAuditStore(), { chains: 4 });

  it('refuses anything that is not an id or a hash, naming the field but not the value', async () => {
    const withName = { type: 'pool.key-claimed', keyId: 'Anna Andersson' } as AuditEvent;
    await expect(log.append(withName)).rejects.toThrow(AuditEventInvalidError);
    await expect(log.append(withName)).rejects.not.toThrow(/Anna/);
    const extra = { type: 'pool.key-claimed', keyId: 'k1', personalNumber: '19121212-1212' } as AuditEvent;
    await expect(log.append(extra)).rejects.toMatchObject({
      code: 'AUDIT_EVENT_INVALID',
      field: 'personalNumber',
    });
    const badHash = {
      type: 'certificate.issued',
      requestId: 'r',
      serial: '0a',
      subjectHash: 'CN=x',
    } as AuditEvent;
    await expect(log.append(badHash)).rejects.toMatchObject({ field: 'subjectHash' });
  });

  it('keeps only hashes of signatures and keys', () => {
    const event = signatureMadeEvent({
      requestId: 'r1',
      signature: Buffer.from('signature'),
      publicKeySpki: Buffer.from('spki'),
    });
    expect(event.signatureHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(event)).not.toContain('signature"');
  });

  it('hashes id lists in their order', () => {
    expect(hashIds(['a', 'b'])).not.toBe(hashIds(['b', 'a']));
  });
});

describe('AuditLog over the memory store', () => {
  it('commits a batch as one entry and returns a receipt per event, in input order', async () => {
    const store = new MemoryAuditStore();
    const log = new AuditLog(store, { chains: 1 });
    const events = [...eventsFor(1), ...eventsFor(2)];
    const receipts = await log.appendMany(events);
    expect(receipts.map((r) => [r.sequence, r.leafIndex, r.treeSize])).toEqual(
      events.map((_, i) => [1, i, 8]),
    );
    expect((await store.readHead(0)).hash).toBe(receipts[7].hash);
    const stored = (await store.readAll()).entries.get(0)![0];
    for (const [i, r] of receipts.entries()) {
      expect(r.path).toHaveLength(3);
      expect(receiptCovers(r, canonicalJson(events[i] as never), stored as never)).toBe(true);
      // Another event's text, or another leaf index, does not verify.
      expect(receiptCovers(r, canonicalJson(events[(i + 1) % 8] as never), stored as never)).toBe(false);
      expect(
        receiptCovers({ ...r, leafIndex: (i + 1) % 8 }, canonicalJson(events[i] as never), stored as never),
      ).toBe(false);
    }
    const report = await verifyAuditStore(store, 1, undefined);
    expect(report).toMatchObject({ intact: true, entries: 1, checkpoints: 0 });
  });

  it('merges appends queued while a write is under way into one entry', async () => {
    const store = new MemoryAuditStore();
    const log = new AuditLog(store, { chains: 4 });
    const receipts = await Promise.all(Array.from({ length: 20 }, (_, i) => log.appendMany(eventsFor(i))));
    const entries = new Set(receipts.flat().map((r) => `${r.chain}/${r.sequence}`));
    // The first append is written alone; the 19 queued behind it share the next entry.
    expect(entries.size).toBe(2);
    expect((await verifyAuditStore(store, 4, undefined)).intact).toBe(true);
  });

  it('keeps chains intact under many concurrent appenders on two instances', async () => {
    const store = new MemoryAuditStore();
    // A store that yields between the head check and the write makes real races possible.
    const racy = Object.assign(Object.create(store) as MemoryAuditStore, {
      appendEntries: async (...args: Parameters<MemoryAuditStore['appendEntries']>) => {
        await new Promise((r) => setImmediate(r));
        return store.appendEntries(...args);
      },
    });
    const a = new AuditLog(racy, { chains: 3 });
    const b = new AuditLog(racy, { chains: 3 });
    const receipts = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).appendMany(eventsFor(i))),
    );
    const report = await verifyAuditStore(store, 3, undefined);
    expect(report.issues).toEqual([]);
    const log = await store.readAll();
    const stored = [...log.entries.values()].flat();
    expect(stored.flatMap((e) => e.events ?? [])).toHaveLength(240);
    // Every receipt points at its own event in a stored entry.
    receipts.forEach((rs, i) =>
      rs.forEach((r, j) => {
        const entry = log.entries.get(r.chain)!.find((e) => e.sequence === r.sequence)!;
        expect(entry.events![r.leafIndex]).toBe(canonicalJson(eventsFor(i)[j] as never));
        expect(receiptCovers(r, entry.events![r.leafIndex], entry as never)).toBe(true);
      }),
    );
  });

  it('writes checkpoints on demand, linked and signed, and none when no head moved', async () => {
    const store = new MemoryAuditStore();
    const { signer, check } = fakeSigner();
    const log = new AuditLog(store, { chains: 2, signer });
    for (let i = 0; i < 6; i++) await log.appendMany(eventsFor(i)); // 24 events
    const first = await log.checkpoint();
    expect(await log.checkpointIfMoved()).toBeUndefined();
    await log.append(eventsFor(7)[0]);
    const second = await log.checkpointIfMoved();
    expect(second?.body).toMatchObject({ sequence: first.body.sequence + 1, prevHash: first.hash });
    const report = await verifyAuditStore(store, 2, check);
    expect(report).toMatchObject({ intact: true, lastCheckpoint: 2, entriesAfterLastCheckpoint: 0 });
  });

  it('signs each entry as its chain head before handing out its receipts', async () => {
    const { signer, check } = fakeSigner();
    const log = new AuditLog(new MemoryAuditStore(), { chains: 3, signer });
    const receipts = await log.appendMany(eventsFor(1));
    for (const r of receipts) {
      expect(r.head).toMatchObject({ keyLabel: signer.keyLabel, algorithm: 'ECDSA-P384-SHA384' });
      expect(verifySignedHead(r, r.head!, check)).toBe(true);
      // The signature is over this position and hash only.
      expect(verifySignedHead({ ...r, sequence: r.sequence + 1 }, r.head!, check)).toBe(false);
      expect(verifySignedHead({ ...r, hash: GENESIS_HASH }, r.head!, check)).toBe(false);
    }
    const unsigned = new AuditLog(new MemoryAuditStore(), { chains: 3, signer, signHeads: false });
    expect((await unsigned.append(eventsFor(1)[0])).head).toBeUndefined();
  });

  it('anchors every checkpoint outside the table, write-once, and anchors what a failed write left behind', async () => {
    const store = new MemoryAuditStore();
    const { signer } = fakeSigner();
    const dir = mkdtempSync(join(tmpdir(), 'anchors-'));
    const anchors = fileAnchorStore(dir);
    const log = new AuditLog(store, { chains: 2, signer, anchors });
    await log.append(eventsFor(1)[0]);
    const first = await log.checkpoint();
    // A checkpoint stored by a writer without the anchor store (or whose anchor write failed).
    await log.append(eventsFor(2)[0]);
    await new AuditLog(store, { chains: 2, signer }).checkpoint();
    expect(await anchors.has(2)).toBe(false);
    await log.append(eventsFor(3)[0]);
    await log.checkpoint();
    expect((await anchors.readAll()).map((a) => a.position)).toEqual([1, 2, 3]);
    // Never overwritten: another text under an anchored sequence is refused, the same text is idempotent.
    const stored = (await store.readCheckpoint(1))!;
    expect(await anchors.put(stored)).toBe(true);
    expect(await anchors.put({ ...stored, body: stored.body.replace('"sequence":1', '"sequence":1 ') })).toBe(
      false,
    );
    expect((await anchors.readAll())[0].body).toBe(stored.body);
    expect(first.body.sequence).toBe(1);
  });

  it('refuses checkpoint() without a signer', async () => {
    await expect(new AuditLog(new MemoryAuditStore(), { chains: 1 }).checkpoint()).rejects.toMatchObject({
      code: 'AUDIT_NOT_READY',
    });
  });
});

describe('proving a receipt', () => {
  it('proves a receipt with a signed head before any checkpoint, and names a cut or rewound chain', async () => {
    const store = new MemoryAuditStore();
    const { signer, check } = fakeSigner();
    const dir = mkdtempSync(join(tmpdir(), 'anchors-'));
    const log = new AuditLog(store, { chains: 1, signer, anchors: fileAnchorStore(dir) });
    const [receipt] = await log.appendMany(eventsFor(1));
    expect(proveReceipt(receipt, await store.readAll(), check)).toMatchObject({ ok: true });
    const { head: _signed, ...unsigned } = receipt;
    expect(proveReceipt(unsigned, await store.readAll(), check).steps.at(-1)).toMatch(
      /FAILED: no signed checkpoint covers/,
    );

    await log.append(eventsFor(2)[0]);
    await log.checkpoint();
    const anchors = await fileAnchorStore(dir).readAll();
    expect(proveReceipt(receipt, await store.readAll(), check, anchors)).toMatchObject({
      ok: true,
      checkpoint: 1,
      anchored: true,
    });

    // Cut the chain back to nothing: the signed head still says what was there.
    for (const key of [...store.items.keys()])
      if (key.startsWith('CHAIN#') || key.startsWith('HEAD#')) store.items.delete(key);
    const cut = proveReceipt(receipt, await store.readAll(), check, anchors);
    expect(cut.ok).toBe(false);
    expect(cut.steps.at(-1)).toMatch(/no longer holds entry 0\/1, which the audit key signed/);
    // ... and written again from the start: another entry at the same place.
    await new AuditLog(store, { chains: 1, signer }).append(eventsFor(3)[0]);
    expect(proveReceipt(receipt, await store.readAll(), check, anchors).steps.at(-1)).toMatch(
      /another entry stands at 0\/1 than the one the audit key signed/,
    );
    // A head signature by another key proves nothing.
    const forged = {
      ...receipt,
      head: {
        ...receipt.head!,
        signature: (await fakeSigner().signer.sign(Buffer.alloc(48))).toString('base64'),
      },
    };
    expect(proveReceipt(forged, await store.readAll(), check).steps.at(-1)).toMatch(
      /head signature does not verify/,
    );
  });
});

/** Carried writes in memory: 'ok' is written with the entry, 'refuse' fails its condition. */
class CarryingMemoryStore extends MemoryAuditStore {
  public readonly carriedWritten: unknown[] = [];

  public async appendEntriesCarrying(
    expected: ChainHead,
    entries: readonly AuditEntry[],
    carried: CarriedWrites,
  ): Promise<CarriedAppendResult> {
    const refused = carried.map((group) => group.includes('refuse'));
    if (refused.some(Boolean)) return { outcome: 'refused', refused };
    if (!(await this.appendEntries(expected, entries))) return { outcome: 'head-moved' };
    this.carriedWritten.push(...carried.flat());
    return { outcome: 'written' };
  }
}

describe("carrying appends (other writes in the entry's transaction)", () => {
  it('commits its events in an entry of their own with the carried writes; plain appends queued meanwhile go in others', async () => {
    const store = new CarryingMemoryStore();
    const log = new AuditLog(store, { chains: 1 });
    const [a, carried, b] = await Promise.all([
      log.append(eventsFor(1)[0]),
      log.appendCarrying(eventsFor(2).slice(0, 2), [['ok-1'], ['ok-2']]),
      log.append(eventsFor(3)[0]),
    ]);
    if (!carried.written) throw new Error('not written');
    expect(carried.receipts.map((r) => [r.sequence, r.leafIndex, r.treeSize])).toEqual([
      [2, 0, 2],
      [2, 1, 2],
    ]);
    expect([a.sequence, b.sequence]).toEqual([1, 3]);
    expect(store.carriedWritten).toEqual(['ok-1', 'ok-2']);
    expect((await verifyAuditStore(store, 1, undefined)).intact).toBe(true);
  });

  it('a refused carried write commits nothing: no entry, the head unmoved, no receipt; the chain goes on from it', async () => {
    const store = new CarryingMemoryStore();
    const log = new AuditLog(store, { chains: 1 });
    await log.append(eventsFor(1)[0]);
    const head = await store.readHead(0);
    const items = store.items.size;
    expect(await log.appendCarrying([eventsFor(2)[0]], [['ok'], ['refuse']])).toEqual({
      written: false,
      refused: [false, true],
    });
    expect(await store.readHead(0)).toEqual(head);
    expect(store.items.size).toBe(items);
    expect(store.carriedWritten).toEqual([]);
    expect((await log.append(eventsFor(3)[0])).sequence).toBe(2);
    expect((await verifyAuditStore(store, 1, undefined)).intact).toBe(true);
  });

  it('needs a store that carries writes', async () => {
    const log = new AuditLog(new MemoryAuditStore(), { chains: 1 });
    await expect(log.appendCarrying([eventsFor(1)[0]], [['ok']])).rejects.toMatchObject({
      code: 'AUDIT_NOT_READY',
    });
  });
});

describe('signatureMade: the signatures a request or key has in the log since a time', () => {
  const KEY = 'a'.repeat(64);
  const OTHER_KEY = 'b'.repeat(64);
  const made = (requestId: string, keySpkiHash: string): AuditEvent => ({
    type: 'signature.made',
    requestId,
    signatureHash: 'c'.repeat(64),
    keySpkiHash,
  });

  it('finds one for the request or with the key in any chain, only in entries written since then', async () => {
    const store = new MemoryAuditStore();
    let now = 1_000;
    const writer = (chain: number) => new AuditLog(store, { chains: 3, chain, clock: () => now });
    // Before `since`: not counted, on whichever chain.
    await writer(0).append(made('r1', KEY));
    now = 5_000;
    await writer(1).append({ type: 'pool.key-claimed', keyId: 'k1', requestId: 'r1' });
    await writer(2).append(made('r2', OTHER_KEY));
    const reader = new AuditLog(store, { chains: 3 });
    const query = { requestId: 'r1', keySpkiHash: KEY, since: 2_000 };
    expect(await reader.signatureMade(query)).toBe(false);
    // Entries written before the window are still read when `since` reaches back to them.
    expect(await reader.signatureMade({ ...query, since: 1_000 })).toBe(true);
    // For the request, with any key; or with the key, for any request.
    now = 6_000;
    await writer(2).append(made('r1', OTHER_KEY));
    expect(await reader.signatureMade(query)).toBe(true);
    const byKey = new MemoryAuditStore();
    await new AuditLog(byKey, { chains: 2, chain: 1, clock: () => 5_000 }).append(made('r9', KEY));
    expect(await new AuditLog(byKey, { chains: 2 }).signatureMade(query)).toBe(true);
  });

  it('an event that does not parse proves nothing absent: it counts as a signature', async () => {
    const store = new MemoryAuditStore();
    await new AuditLog(store, { chains: 1, clock: () => 5_000 }).append({
      type: 'pool.key-claimed',
      keyId: 'k1',
    });
    const entry = store.items.get('CHAIN#0|000000000001')!;
    store.items.set('CHAIN#0|000000000001', { ...entry, events: ['{not json'] });
    const reader = new AuditLog(store, { chains: 1 });
    expect(await reader.signatureMade({ requestId: 'r1', keySpkiHash: KEY, since: 0 })).toBe(true);
  });

  it('without a store that reads entries back there is no evidence: it throws', async () => {
    const store = new MemoryAuditStore();
    const bare = Object.assign(Object.create(store) as MemoryAuditStore, { readEntriesSince: undefined });
    await expect(
      new AuditLog(bare, { chains: 1 }).signatureMade({ requestId: 'r', keySpkiHash: KEY, since: 0 }),
    ).rejects.toMatchObject({ code: expect.any(String) });
  });
});
