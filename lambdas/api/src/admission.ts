/**
 * The API's admission of sign requests by key supply (core pool/admission.ts decides): the pool's
 * counters of the key type asked for (only that type's) and the open requests per key type and client,
 * each read at most once per `maxAgeMs` by this process (concurrent requests share one read), plus the requests this process accepted since the last
 * read of the open requests, so a burst within that time is counted too.
 */
import {
  admitSignRequest,
  type AdmissionDecision,
  type AdmissionSettings,
  type OpenRequestCounts,
} from '@pipeline/core/pool';
import type { KeyType } from '@pipeline/core/shared';

export interface AdmissionSources {
  /** Available pool keys of one key type (its counters). */
  available(keyType: KeyType): Promise<number>;
  /** Open requests per key type and client (the open-requests index). */
  openCounts(): Promise<OpenRequestCounts>;
}

export interface AdmissionOptions extends AdmissionSettings {
  /** Longest a read of the counts is reused (ms); default 1000. */
  readonly maxAgeMs?: number;
  /** Epoch ms; default Date.now. */
  readonly clock?: () => number;
}

interface Cached<T> {
  readonly at: number;
  readonly value: Promise<T>;
}

export class SignRequestAdmission {
  private readonly pool = new Map<KeyType, Cached<number>>();
  private open: Cached<OpenRequestCounts> | undefined;
  /** Accepted by this process since the open counts were read. */
  private acceptedSince: Array<{
    readonly keyType: KeyType;
    readonly clientId: string;
    readonly weight: number;
  }> = [];

  public constructor(
    private readonly sources: AdmissionSources,
    private readonly options: AdmissionOptions,
  ) {}

  /**
   * Whether one more request of the type from the client, of that weight, is accepted (see admitSignRequest). An accepted
   * one is counted at once, until the next read of the open requests includes it: concurrent requests of
   * this process are decided one after the other, each seeing the ones before it.
   */
  public async decide(
    keyType: KeyType,
    clientId: string,
    /** The request's weight (core requestWeight); default 1. */
    weight = 1,
  ): Promise<{ readonly decision: AdmissionDecision; readonly cancel: () => void }> {
    const [available, read] = await Promise.all([this.availableKeys(keyType), this.openRead()]);
    // From here on synchronous: no other decision of this process runs in between.
    const open = this.withAcceptedSince(read);
    const decision = admitSignRequest({ keyType, clientId, available, open, weight }, this.options);
    if (decision.kind !== 'accept') return { decision, cancel: () => undefined };
    const entry = { keyType, clientId, weight };
    this.acceptedSince.push(entry);
    return {
      decision,
      // The request was not accepted after all (a refused assertion, a resend): it no longer counts.
      cancel: () => {
        const at = this.acceptedSince.indexOf(entry);
        if (at >= 0) this.acceptedSince.splice(at, 1);
      },
    };
  }

  private availableKeys(keyType: KeyType): Promise<number> {
    const now = this.now();
    const cached = this.pool.get(keyType);
    if (cached && now - cached.at < this.maxAgeMs()) return cached.value;
    const value = this.sources.available(keyType);
    const read = { at: now, value };
    this.pool.set(keyType, read);
    value.catch(() => this.pool.get(keyType) === read && this.pool.delete(keyType));
    return value;
  }

  private openRead(): Promise<OpenRequestCounts> {
    const now = this.now();
    if (!this.open || now - this.open.at >= this.maxAgeMs()) {
      // Requests accepted from now on are not in this read (it may miss some accepted just before).
      this.acceptedSince = [];
      const value = this.sources.openCounts();
      this.open = { at: now, value };
      value.catch(() => (this.open = undefined));
    }
    return this.open.value;
  }

  private withAcceptedSince(read: OpenRequestCounts): OpenRequestCounts {
    if (this.acceptedSince.length === 0) return read;
    const byType = { ...read.byType };
    const byClient: Partial<Record<KeyType, Record<string, number>>> = {};
    for (const [type, clients] of Object.entries(read.byClient)) byClient[type as KeyType] = { ...clients };
    for (const { keyType: type, clientId: client, weight } of this.acceptedSince) {
      byType[type] = (byType[type] ?? 0) + weight;
      const clients = (byClient[type] ??= {});
      clients[client] = (clients[client] ?? 0) + weight;
    }
    return { byType, byClient };
  }

  private now(): number {
    return (this.options.clock ?? Date.now)();
  }

  private maxAgeMs(): number {
    return this.options.maxAgeMs ?? 1000;
  }
}
