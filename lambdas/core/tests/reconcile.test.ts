import {
  decideReconcile,
  reconcileOpenRequests,
  type OpenRequest,
  type OpenRequestStore,
  type ReconcileSettings,
} from '../src/signing';

const settings: ReconcileSettings = { staleAfterMs: 60_000, maxRequeues: 2 };
const T0 = 1_800_000_000_000;

function open(overrides: Partial<OpenRequest> = {}): OpenRequest {
  return { id: 'r', status: 'received', receivedAt: T0, ...overrides };
}

describe('decideReconcile', () => {
  test('terminal requests are left alone', () => {
    for (const status of ['signed', 'failed'] as const) {
      expect(decideReconcile(open({ status }), T0 + 10 * 60_000, settings)).toEqual({
        kind: 'leave',
        reason: 'terminal',
      });
    }
  });

  test('a request quiet for less than staleAfterMs is left alone', () => {
    expect(decideReconcile(open(), T0 + 59_999, settings).kind).toBe('leave');
    expect(decideReconcile(open(), T0 + 60_000, settings)).toEqual({ kind: 'requeue', requeues: 0 });
  });

  test('quiet time counts from the lease end and from the last requeue, whichever is latest', () => {
    const signing = open({ status: 'signing', leaseUntil: T0 + 120_000 });
    expect(decideReconcile(signing, T0 + 179_999, settings).kind).toBe('leave');
    expect(decideReconcile(signing, T0 + 180_000, settings).kind).toBe('requeue');
    const requeued = open({ requeues: 1, requeuedAt: T0 + 300_000 });
    expect(decideReconcile(requeued, T0 + 359_999, settings).kind).toBe('leave');
    expect(decideReconcile(requeued, T0 + 360_000, settings)).toEqual({ kind: 'requeue', requeues: 1 });
  });

  test('after maxRequeues the request is abandoned with DELIVERY_LOST', () => {
    const decision = decideReconcile(open({ requeues: 2, requeuedAt: T0 }), T0 + 60_000, settings);
    expect(decision.kind).toBe('abandon');
    if (decision.kind === 'abandon') {
      expect(decision.error.code).toBe('DELIVERY_LOST');
      expect(decision.error.message).toMatch(/2 requeues/);
    }
  });
});

/** An in-memory store with the repository's conditional semantics. */
class MemoryOpenStore implements OpenRequestStore {
  public readonly records = new Map<string, OpenRequest & { error?: string }>();
  public listOpen(receivedBefore: number, limit: number): Promise<readonly string[]> {
    return Promise.resolve(
      [...this.records.values()]
        .filter((r) => (r.status === 'received' || r.status === 'signing') && r.receivedAt < receivedBefore)
        .sort((a, b) => a.receivedAt - b.receivedAt)
        .slice(0, limit)
        .map((r) => r.id),
    );
  }
  public getOpen(id: string): Promise<OpenRequest | undefined> {
    return Promise.resolve(this.records.get(id));
  }
  public markRequeued(id: string, expected: number, now: number): Promise<boolean> {
    const r = this.records.get(id);
    if (!r || (r.requeues ?? 0) !== expected || !['received', 'signing'].includes(r.status)) {
      return Promise.resolve(false);
    }
    this.records.set(id, { ...r, requeues: expected + 1, requeuedAt: now });
    return Promise.resolve(true);
  }
  public abandon(id: string, error: { code: string }, now: number): Promise<OpenRequest | undefined> {
    const r = this.records.get(id);
    if (!r || !['received', 'signing'].includes(r.status) || (r.leaseUntil ?? 0) >= now) {
      return Promise.resolve(undefined);
    }
    const failed = { ...r, status: 'failed' as const, error: error.code };
    this.records.set(id, failed);
    return Promise.resolve(failed);
  }
}

describe('reconcileOpenRequests', () => {
  test('requeues quiet requests, abandons exhausted ones, leaves active and terminal ones', async () => {
    const store = new MemoryOpenStore();
    const put = (r: OpenRequest): void => void store.records.set(r.id, r);
    put(open({ id: 'lost' }));
    put(open({ id: 'stuck-signing', status: 'signing', leaseUntil: T0 + 1_000 }));
    put(open({ id: 'exhausted', requeues: 2, requeuedAt: T0 }));
    put(open({ id: 'live-lease', status: 'signing', leaseUntil: T0 + 10 * 60_000 }));
    put(open({ id: 'fresh', receivedAt: T0 + 4 * 60_000 }));
    put(open({ id: 'done', status: 'signed' }));
    const sent: string[] = [];
    const summary = await reconcileOpenRequests({
      store,
      enqueue: (id) => Promise.resolve(void sent.push(id)),
      settings,
      limit: 100,
      clock: () => T0 + 5 * 60_000,
    });
    expect(sent.sort()).toEqual(['lost', 'stuck-signing']);
    expect(summary).toEqual({ examined: 4, requeued: 2, abandoned: 1, raced: 0 });
    expect(store.records.get('exhausted')?.status).toBe('failed');
    expect(store.records.get('lost')).toMatchObject({ requeues: 1, requeuedAt: T0 + 5 * 60_000 });
    expect(store.records.get('live-lease')?.status).toBe('signing');
    expect(store.records.get('fresh')?.requeues).toBeUndefined();
  });

  test('a request that moved on between read and write is counted as raced, not requeued', async () => {
    const store = new MemoryOpenStore();
    store.records.set('r', open());
    const sent: string[] = [];
    // Another run requeued it between this run's read and its conditional write.
    const racing: OpenRequestStore = {
      listOpen: (before, limit) => store.listOpen(before, limit),
      getOpen: async (id) => {
        const read = await store.getOpen(id);
        await store.markRequeued(id, 0, T0);
        return read;
      },
      markRequeued: (id, expected, now) => store.markRequeued(id, expected, now),
      abandon: (id, error, now) => store.abandon(id, error, now),
    };
    const summary = await reconcileOpenRequests({
      store: racing,
      enqueue: (id) => Promise.resolve(void sent.push(id)),
      settings,
      limit: 10,
      clock: () => T0 + 120_000,
    });
    expect(sent).toEqual([]);
    expect(summary).toEqual({ examined: 1, requeued: 0, abandoned: 0, raced: 1 });
    expect(store.records.get('r')?.requeues).toBe(1);
  });
});
