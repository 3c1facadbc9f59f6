/**
 * Each kind of tampering an attacker with write access to the table could do, applied to a copy of a
 * real log, must be detected and named by chain and sequence.
 */
import {
  entryHash,
  merkleRoot,
  verifyAuditLog,
  type AuditIssue,
  type AuditVerificationReport,
  type StoredCheckpoint,
} from '@pipeline/core/audit';
import { AuditLog, verifyAuditStore } from '../src';
import { MemoryAuditStore, pad, type MemoryItem } from '../../test-support/memory-audit-store';
import { eventsFor, fakeSigner } from './helpers';

const CHAINS = 2;
const { signer, check } = fakeSigner();
let pristine: Map<string, MemoryItem>;

beforeAll(async () => {
  const store = new MemoryAuditStore();
  // Two writers, one per chain; each append is one entry (a Merkle tree of four events).
  const logs = [0, 1].map((chain) => new AuditLog(store, { chains: CHAINS, chain, signer }));
  const log = logs[0];
  for (let i = 0; i < 20; i++) await logs[i % 2].appendMany(eventsFor(i));
  await log.checkpoint();
  for (let i = 20; i < 30; i++) await logs[i % 2].appendMany(eventsFor(i));
  await log.checkpoint();
  for (let i = 30; i < 34; i++) await logs[i % 2].appendMany(eventsFor(i)); // after the last checkpoint
  pristine = store.items;
});

/** A fresh copy of the log to tamper with. */
function copy(): MemoryAuditStore {
  const store = new MemoryAuditStore();
  for (const [k, v] of pristine) store.items.set(k, { ...v });
  return store;
}

const entry = (s: MemoryAuditStore, chain: number, seq: number): MemoryItem =>
  s.items.get(`CHAIN#${chain}|${pad(seq)}`) as MemoryItem;
const head = (s: MemoryAuditStore, chain: number): MemoryItem =>
  s.items.get(`HEAD#${chain}|HEAD`) as MemoryItem;
const rehash = (item: MemoryItem): void => {
  item.hash = entryHash(
    item.chain as number,
    item.sequence as number,
    item.prevHash as string,
    merkleRoot(item.events as string[]),
    (item.events as string[]).length,
    item.timestamp as number,
  );
};
const move = (s: MemoryAuditStore, chain: number, from: number, to: number): void => {
  s.items.set(`CHAIN#${chain}|${pad(to)}`, { ...entry(s, chain, from), sk: pad(to) });
};

async function verify(s: MemoryAuditStore): Promise<AuditVerificationReport> {
  const r = await verifyAuditStore(s, CHAINS, check);
  if (process.env.AUDIT_DEBUG)
    console.log(expect.getState().currentTestName, JSON.stringify(r.issues, null, 1));
  return r;
}

function expectIssue(report: AuditVerificationReport, issue: Partial<AuditIssue>): void {
  expect(report.intact).toBe(false);
  expect(report.issues).toContainEqual(expect.objectContaining(issue));
}

describe('audit verifier', () => {
  it('reports an untouched log as intact', async () => {
    const report = await verify(copy());
    expect(report).toMatchObject({ intact: true, entries: 34, checkpoints: 2, lastCheckpoint: 2 });
    expect(report.entriesAfterLastCheckpoint).toBe(4);
  });

  it('names a modified entry', async () => {
    const s = copy();
    entry(s, 1, 5).events = (entry(s, 1, 5).events as string[]).map((t) => t.replace('req-', 'reX-'));
    const report = await verify(s);
    expectIssue(report, { kind: 'modified', chain: 1, sequence: 5 });
    expect(report.issues).toHaveLength(1);
  });

  it('names an entry replaced with a re-hashed one', async () => {
    const s = copy();
    const e = entry(s, 0, 7);
    e.events = (e.events as string[]).map((t) => t.replace('req-', 'reX-'));
    rehash(e);
    const report = await verify(s);
    expectIssue(report, { kind: 'modified', chain: 0, sequence: 7 });
    expect(report.issues).toHaveLength(1);
  });

  it('names a deleted entry', async () => {
    const s = copy();
    s.items.delete(`CHAIN#1|${pad(4)}`);
    const report = await verify(s);
    expectIssue(report, { kind: 'deleted', chain: 1, sequence: 4 });
    expect(report.issues.filter((i) => i.kind === 'deleted')).toHaveLength(1);
  });

  it('names reordered (swapped) entries', async () => {
    const s = copy();
    const five = entry(s, 0, 5);
    const six = entry(s, 0, 6);
    s.items.set(`CHAIN#0|${pad(5)}`, { ...six, sk: pad(5) });
    s.items.set(`CHAIN#0|${pad(6)}`, { ...five, sk: pad(6) });
    const report = await verify(s);
    expectIssue(report, { kind: 'reordered', chain: 0, sequence: 5 });
    expectIssue(report, { kind: 'reordered', chain: 0, sequence: 6 });
    expect(report.issues).toHaveLength(2);
  });

  it('names an inserted entry (later entries shifted, forged one linked in)', async () => {
    const s = copy();
    const last = head(s, 1).sequence as number;
    for (let seq = last; seq >= 3; seq--) move(s, 1, seq, seq + 1);
    const forged = entry(s, 1, 3);
    Object.assign(forged, {
      sk: pad(3),
      events: ['{"keyId":"forged","type":"pool.key-claimed"}'],
      timestamp: 1,
    });
    rehash(forged);
    s.items.set(`CHAIN#1|${pad(3)}`, forged);
    const report = await verify(s);
    expectIssue(report, { kind: 'inserted', chain: 1, sequence: 3 });
    expectIssue(report, { kind: 'reordered', chain: 1, sequence: 4 });
  });

  it('names an entry appended beyond the head', async () => {
    const s = copy();
    const last = head(s, 0).sequence as number;
    const forged = {
      ...entry(s, 0, last),
      sk: pad(last + 1),
      sequence: last + 1,
      prevHash: entry(s, 0, last).hash,
    };
    rehash(forged);
    s.items.set(`CHAIN#0|${pad(last + 1)}`, forged);
    expectIssue(await verify(s), { kind: 'inserted', chain: 0, sequence: last + 1 });
  });

  it('names entries cut off the end, head left alone', async () => {
    const s = copy();
    const last = head(s, 1).sequence as number;
    s.items.delete(`CHAIN#1|${pad(last)}`);
    expectIssue(await verify(s), { kind: 'deleted', chain: 1, sequence: last });
  });

  it('names a truncated chain whose head was rewound, when a checkpoint covered the cut entries', async () => {
    const s = copy();
    const cp1 = JSON.parse(s.items.get(`CHECKPOINT|${pad(1)}`)?.body as string) as {
      heads: { chain: number; sequence: number }[];
    };
    const covered = cp1.heads.find((h) => h.chain === 0)?.sequence as number;
    const last = head(s, 0).sequence as number;
    for (let seq = covered - 1; seq <= last; seq++) s.items.delete(`CHAIN#0|${pad(seq)}`);
    Object.assign(head(s, 0), { sequence: covered - 2, hash: entry(s, 0, covered - 2).hash });
    const report = await verify(s);
    expectIssue(report, { kind: 'checkpoint-mismatch', chain: 0, sequence: covered });
    expect(report.issues.find((i) => i.kind === 'checkpoint-mismatch')?.detail).toMatch(/truncated/);
  });

  it('names a checkpoint with a forged signature and one whose body was edited', async () => {
    const s = copy();
    const forger = fakeSigner();
    const cp = s.items.get(`CHECKPOINT|${pad(2)}`) as MemoryItem;
    cp.signature = await forger.signer.sign(Buffer.alloc(48));
    expectIssue(await verify(s), { kind: 'checkpoint-signature', sequence: 2 });

    const t = copy();
    const cp1 = t.items.get(`CHECKPOINT|${pad(1)}`) as MemoryItem;
    cp1.body = (cp1.body as string).replace('"createdAt":', '"createdAt":1');
    expectIssue(await verify(t), { kind: 'checkpoint-signature', sequence: 1 });
  });

  it('names a deleted checkpoint', async () => {
    const s = copy();
    s.items.delete(`CHECKPOINT|${pad(1)}`);
    expectIssue(await verify(s), { kind: 'checkpoint-chain', sequence: 1 });
  });

  it('names an item that is not part of the layout', async () => {
    const s = copy();
    s.items.set('JUNK|x', { pk: 'JUNK', sk: 'x' });
    s.items.set(`CHAIN#0|abc`, { pk: 'CHAIN#0', sk: 'abc' });
    const report = await verify(s);
    expect(report.issues.filter((i) => i.kind === 'inserted')).toHaveLength(2);
  });

  it('cannot see a consistent rewrite of the tail after the last checkpoint (documented limit)', async () => {
    const s = copy();
    const last = head(s, 1).sequence as number;
    const e = entry(s, 1, last);
    e.events = (e.events as string[]).map((t) => t.replace('req-', 'reX-'));
    rehash(e);
    head(s, 1).hash = e.hash;
    expect((await verify(s)).intact).toBe(true);
  });
});

describe('audit verifier against anchors (checkpoints copied outside the table)', () => {
  const MAX_LAG_MS = 60_000;
  /** The anchor store as the checkpointer left it: a copy of each checkpoint as it was written. */
  const anchorsOf = (sequences: readonly number[]): StoredCheckpoint[] =>
    sequences.map((sequence) => {
      const item = pristine.get(`CHECKPOINT|${pad(sequence)}`)!;
      return {
        position: sequence,
        rawPosition: `${pad(sequence)}.json`,
        body: item.body as string,
        signature: item.signature as Buffer,
      };
    });
  const newest = (): number =>
    Math.max(...[...pristine.values()].map((i) => (typeof i.timestamp === 'number' ? i.timestamp : 0)));

  async function verifyAnchored(
    s: MemoryAuditStore,
    anchors: StoredCheckpoint[] = anchorsOf([1, 2]),
    now = newest() + 1000,
  ): Promise<AuditVerificationReport> {
    const r = verifyAuditLog({ ...(await s.readAll()), chains: CHAINS }, check, {
      anchors,
      now,
      maxLagMs: MAX_LAG_MS,
    });
    if (process.env.AUDIT_DEBUG)
      console.log(expect.getState().currentTestName, JSON.stringify(r.issues, null, 1));
    return r;
  }
  const recordedBy = (s: MemoryAuditStore, sequence: number, chain: number): number =>
    (
      JSON.parse(s.items.get(`CHECKPOINT|${pad(sequence)}`)!.body as string) as {
        heads: { chain: number; sequence: number }[];
      }
    ).heads.find((h) => h.chain === chain)!.sequence;

  it('reports an untouched log whose checkpoints are all anchored as intact', async () => {
    expect(await verifyAnchored(copy())).toMatchObject({ intact: true, anchors: 2, lastAnchored: 2 });
  });

  it('names the truncation of a chain and its rewound head, with the table checkpoints deleted too', async () => {
    const s = copy();
    const recorded = recordedBy(s, 2, 0);
    const last = head(s, 0).sequence as number;
    for (let seq = recorded - 1; seq <= last; seq++) s.items.delete(`CHAIN#0|${pad(seq)}`);
    Object.assign(head(s, 0), { sequence: recorded - 2, hash: entry(s, 0, recorded - 2).hash });
    // The attacker removes the checkpoint that recorded the cut entries, and its head.
    s.items.delete(`CHECKPOINT|${pad(2)}`);
    const cp1 = s.items.get(`CHECKPOINT|${pad(1)}`)!;
    Object.assign(s.items.get('CHECKPOINT#HEAD|HEAD')!, { sequence: 1, hash: cp1.hash });
    // The table alone no longer shows it ...
    expect((await verify(s)).issues.some((i) => i.chain === 0 && i.sequence === recorded)).toBe(false);
    // ... the anchors do, with positions.
    const report = await verifyAnchored(s);
    expectIssue(report, { kind: 'truncated', chain: 0, sequence: recorded });
    expect(report.issues.find((i) => i.kind === 'truncated')?.detail).toMatch(
      new RegExp(`anchored checkpoint 2 recorded the chain up to here, it now ends at ${recorded - 2}`),
    );
    expectIssue(report, { kind: 'checkpoint-chain', sequence: 2 });
  });

  it('names a rewind: the head moved back and the chain written again, consistently re-hashed', async () => {
    const s = copy();
    const recorded = recordedBy(s, 2, 1);
    const last = head(s, 1).sequence as number;
    // Rewrite everything from the anchored head on, re-hashing and re-linking as an honest writer would.
    let prev = entry(s, 1, recorded - 1).hash as string;
    for (let seq = recorded; seq <= last; seq++) {
      const e = entry(s, 1, seq);
      e.events = (e.events as string[]).map((t) => t.replace('req-', 'reX-'));
      e.prevHash = prev;
      rehash(e);
      prev = e.hash as string;
    }
    head(s, 1).hash = prev;
    for (const n of [1, 2]) s.items.delete(`CHECKPOINT|${pad(n)}`);
    s.items.delete('CHECKPOINT#HEAD|HEAD');
    expect((await verify(s)).intact).toBe(true); // the table is self-consistent
    expectIssue(await verifyAnchored(s), { kind: 'rewound', chain: 1, sequence: recorded });
  });

  it('names anchored checkpoints that are missing, and table checkpoints never anchored', async () => {
    const report = await verifyAnchored(copy(), anchorsOf([2]), newest() + 10 * MAX_LAG_MS);
    expectIssue(report, { kind: 'anchor-gap', sequence: 1 });
    expectIssue(report, { kind: 'not-anchored', sequence: 1 });
    // A checkpoint younger than the lag may still be on its way to the anchor store.
    const fresh = await verifyAnchored(copy(), anchorsOf([1]));
    expect(fresh.issues.filter((i) => i.kind === 'not-anchored')).toEqual([]);
  });

  it('names entries older than the lag that no anchor covers, per chain from the first one', async () => {
    const s = copy();
    const report = await verifyAnchored(s, anchorsOf([1, 2]), newest() + 2 * MAX_LAG_MS);
    for (const chain of [0, 1]) {
      expectIssue(report, { kind: 'uncovered', chain, sequence: recordedBy(s, 2, chain) + 1 });
    }
  });

  it('names a forged anchor', async () => {
    const [one, two] = anchorsOf([1, 2]);
    const forged = { ...two, signature: await fakeSigner().signer.sign(Buffer.alloc(48)) };
    expectIssue(await verifyAnchored(copy(), [one, forged]), { kind: 'checkpoint-signature', sequence: 2 });
  });
});
