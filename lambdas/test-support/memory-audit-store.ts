/**
 * Test support: an AuditStore in memory, with the same conditional semantics as the DynamoDB repository. For unit tests
 * (of the log, of the verifier, and of callers that take an AuditSink); `items` is public so tests can
 * tamper with it the way an attacker with table access would.
 */
import {
  auditSequenceSk as pad,
  genesisHead,
  parseAuditItems,
  type AnchoredCheckpoint,
  type AuditEntry,
  type AuditStore,
  type ChainHead,
  type SignedCheckpoint,
  type StoredAuditLog,
} from '@pipeline/core/audit';

export { pad };

export type MemoryItem = Record<string, unknown> & { pk: string; sk: string };

export class MemoryAuditStore implements AuditStore {
  /** `${pk}|${sk}` -> item, in the DynamoDB item layout. */
  public readonly items = new Map<string, MemoryItem>();

  public async readHead(chain: number): Promise<ChainHead> {
    const item = this.items.get(`HEAD#${chain}|HEAD`);
    return item
      ? { chain, sequence: item.sequence as number, hash: item.hash as string }
      : genesisHead(chain);
  }

  public async readHeads(chains: number): Promise<ChainHead[]> {
    return Promise.all(Array.from({ length: chains }, (_, c) => this.readHead(c)));
  }

  public async appendEntries(expected: ChainHead, entries: readonly AuditEntry[]): Promise<boolean> {
    const current = await this.readHead(expected.chain);
    if (current.sequence !== expected.sequence) return false;
    if (entries.some((e) => this.items.has(`CHAIN#${e.chain}|${pad(e.sequence)}`))) return false;
    for (const e of entries) {
      this.put({
        pk: `CHAIN#${e.chain}`,
        sk: pad(e.sequence),
        chain: e.chain,
        sequence: e.sequence,
        prevHash: e.prevHash,
        events: [...e.events],
        timestamp: e.timestamp,
        hash: e.hash,
      });
    }
    const last = entries[entries.length - 1];
    this.put({ pk: `HEAD#${expected.chain}`, sk: 'HEAD', sequence: last.sequence, hash: last.hash });
    return true;
  }

  public async readEntryHash(chain: number, sequence: number): Promise<string | undefined> {
    const hash = this.items.get(`CHAIN#${chain}|${pad(sequence)}`)?.hash;
    return typeof hash === 'string' ? hash : undefined;
  }

  /** Newest first, down to the first entry older than `since`, as the DynamoDB repository reads them. */
  public async readEntriesSince(chain: number, since: number): Promise<AuditEntry[]> {
    const stored = [...this.items.values()]
      .filter((i) => i.pk === `CHAIN#${chain}`)
      .sort((a, b) => b.sk.localeCompare(a.sk));
    const entries: AuditEntry[] = [];
    for (const i of stored) {
      if ((i.timestamp as number) < since) break;
      entries.push({
        chain,
        sequence: i.sequence as number,
        prevHash: i.prevHash as string,
        events: i.events as string[],
        timestamp: i.timestamp as number,
        hash: i.hash as string,
      });
    }
    return entries;
  }

  public async readCheckpointHead(): Promise<{ sequence: number; hash: string } | undefined> {
    const item = this.items.get('CHECKPOINT#HEAD|HEAD');
    return item ? { sequence: item.sequence as number, hash: item.hash as string } : undefined;
  }

  public async putCheckpoint(checkpoint: SignedCheckpoint, canonicalBody: string): Promise<boolean> {
    const current = (await this.readCheckpointHead())?.sequence ?? 0;
    if (current !== checkpoint.body.sequence - 1) return false;
    const sk = pad(checkpoint.body.sequence);
    this.put({
      pk: 'CHECKPOINT',
      sk,
      body: canonicalBody,
      signature: checkpoint.signature,
      hash: checkpoint.hash,
    });
    this.put({
      pk: 'CHECKPOINT#HEAD',
      sk: 'HEAD',
      sequence: checkpoint.body.sequence,
      hash: checkpoint.hash,
    });
    return true;
  }

  public async readCheckpoint(sequence: number): Promise<AnchoredCheckpoint | undefined> {
    const item = this.items.get(`CHECKPOINT|${pad(sequence)}`);
    if (!item) return undefined;
    return {
      sequence,
      body: item.body as string,
      signature: Buffer.from(item.signature as Buffer),
      hash: item.hash as string,
    };
  }

  public async readAll(): Promise<StoredAuditLog> {
    return parseAuditItems([...this.items.values()]);
  }

  private put(item: MemoryItem): void {
    this.items.set(`${item.pk}|${item.sk}`, item);
  }
}
