/**
 * An AuditStore in memory, with the same conditional semantics as the DynamoDB repository. For unit tests
 * (of the log, of the verifier, and of callers that take an AuditSink); `items` is public so tests can
 * tamper with it the way an attacker with table access would.
 */
import {
  genesisHead,
  type AuditEntry,
  type AuditStore,
  type ChainHead,
  type SignedCheckpoint,
  type StoredAuditEntry,
  type StoredAuditLog,
  type StoredCheckpoint,
} from '../../core/src';

export type MemoryItem = Record<string, unknown> & { pk: string; sk: string };

export const pad = (n: number): string => String(n).padStart(12, '0');

export class MemoryAuditStore implements AuditStore {
  /** `${pk}|${sk}` -> item, in the DynamoDB item layout. */
  public readonly items = new Map<string, MemoryItem>();

  public async readHead(chain: number): Promise<ChainHead> {
    const item = this.items.get(`HEAD#${chain}|HEAD`);
    return item ? { chain, sequence: item.sequence as number, hash: item.hash as string } : genesisHead(chain);
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
        event: e.event,
        timestamp: e.timestamp,
        hash: e.hash,
      });
    }
    const last = entries[entries.length - 1];
    this.put({ pk: `HEAD#${expected.chain}`, sk: 'HEAD', sequence: last.sequence, hash: last.hash });
    return true;
  }

  public async readCheckpointHead(): Promise<{ sequence: number; hash: string } | undefined> {
    const item = this.items.get('CHECKPOINT#HEAD|HEAD');
    return item ? { sequence: item.sequence as number, hash: item.hash as string } : undefined;
  }

  public async putCheckpoint(checkpoint: SignedCheckpoint, canonicalBody: string): Promise<boolean> {
    const current = (await this.readCheckpointHead())?.sequence ?? 0;
    if (current !== checkpoint.body.sequence - 1) return false;
    const sk = pad(checkpoint.body.sequence);
    this.put({ pk: 'CHECKPOINT', sk, body: canonicalBody, signature: checkpoint.signature, hash: checkpoint.hash });
    this.put({ pk: 'CHECKPOINT#HEAD', sk: 'HEAD', sequence: checkpoint.body.sequence, hash: checkpoint.hash });
    return true;
  }

  public async readAll(): Promise<StoredAuditLog> {
    return parseAuditItems([...this.items.values()]);
  }

  private put(item: MemoryItem): void {
    this.items.set(`${item.pk}|${item.sk}`, item);
  }
}

/** Sorts raw items (DynamoDB layout) into entries, heads and checkpoints, tolerating any tampering. */
export function parseAuditItems(items: readonly Record<string, unknown>[]): StoredAuditLog {
  const entries = new Map<number, StoredAuditEntry[]>();
  const heads = new Map<number, { sequence?: number; hash?: string }>();
  const checkpoints: StoredCheckpoint[] = [];
  const foreign: string[] = [];
  const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const position = (sk: string): number | undefined => (/^\d{12}$/.test(sk) ? Number(sk) : undefined);
  for (const item of items) {
    const pk = String(item.pk);
    const sk = String(item.sk);
    const chainMatch = /^(CHAIN|HEAD)#(\d{1,6})$/.exec(pk);
    if (chainMatch?.[1] === 'CHAIN') {
      const chain = Number(chainMatch[2]);
      const list = entries.get(chain) ?? [];
      list.push({
        chain,
        position: position(sk),
        rawPosition: sk,
        entryChain: num(item.chain),
        sequence: num(item.sequence),
        prevHash: str(item.prevHash),
        event: str(item.event),
        timestamp: num(item.timestamp),
        hash: str(item.hash),
      });
      entries.set(chain, list);
    } else if (chainMatch?.[1] === 'HEAD' && sk === 'HEAD') {
      heads.set(Number(chainMatch[2]), { sequence: num(item.sequence), hash: str(item.hash) });
    } else if (pk === 'CHECKPOINT') {
      const signature = item.signature instanceof Uint8Array ? Buffer.from(item.signature) : undefined;
      checkpoints.push({ position: position(sk), rawPosition: sk, body: str(item.body), signature });
    } else if (!(pk === 'CHECKPOINT#HEAD' && sk === 'HEAD')) {
      foreign.push(`${pk}/${sk}`);
    }
  }
  for (const list of entries.values()) list.sort((a, b) => a.rawPosition.localeCompare(b.rawPosition));
  return { entries, heads, checkpoints, foreign };
}
