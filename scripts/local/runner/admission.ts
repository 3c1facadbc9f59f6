/**
 * What API Gateway admits before the function runs, as the stack configures it (ApiLimits): per client
 * (its usage plan) a daily quota and a throttle over all its methods, and the stage throttle, which API
 * Gateway applies to each method of the stage. A request takes from every bucket it passes only when it
 * passes them all, so a client refused for its own limit uses none of the room it leaves to others.
 */
import type { ApiLimits } from '@pipeline/config';
import { TokenBucket } from './token-bucket';

const DAY_MS = 86_400_000;

export type Admitted = { readonly ok: true };

export interface Refused {
  readonly ok: false;
  /** API Gateway's gateway response types for a 429. */
  readonly code: 'THROTTLED' | 'QUOTA_EXCEEDED';
  readonly message: string;
  readonly retryAfterSeconds: number;
}

export class Admission {
  private readonly stage = new Map<string, TokenBucket>();
  private readonly clients = new Map<string, TokenBucket>();
  /** Requests admitted per client in the current quota day (UTC). */
  private readonly used = new Map<string, { readonly day: number; count: number }>();

  public constructor(
    private readonly limits: ApiLimits,
    /** Epoch ms. */
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * `method` names the stage's method (`POST /sign-requests`); `clientId` is the caller of a method
   * that requires an API key (usage plan), undefined for one that does not.
   */
  public admit(method: string, clientId: string | undefined): Admitted | Refused {
    const stage = this.bucket(this.stage, method, this.limits.stage);
    if (clientId !== undefined) {
      const { quotaPerDay } = this.limits.client;
      const now = this.clock();
      const day = Math.floor(now / DAY_MS);
      let used = this.used.get(clientId);
      if (used?.day !== day) this.used.set(clientId, (used = { day, count: 0 }));
      if (quotaPerDay > 0 && used.count >= quotaPerDay) {
        return {
          ok: false,
          code: 'QUOTA_EXCEEDED',
          message: "this client's daily request quota is used up",
          retryAfterSeconds: Math.ceil(((day + 1) * DAY_MS - now) / 1000),
        };
      }
      const client = this.bucket(this.clients, clientId, this.limits.client);
      if (!client.ready()) return throttled('too many requests for this client', client);
      if (!stage.ready()) return throttled('too many requests', stage);
      client.take();
      used.count++;
    } else if (!stage.ready()) {
      return throttled('too many requests', stage);
    }
    stage.take();
    return { ok: true };
  }

  private bucket(
    buckets: Map<string, TokenBucket>,
    key: string,
    limits: { readonly rateLimit: number; readonly burstLimit: number },
  ): TokenBucket {
    let bucket = buckets.get(key);
    if (!bucket)
      buckets.set(key, (bucket = new TokenBucket(limits.rateLimit, limits.burstLimit, this.clock)));
    return bucket;
  }
}

function throttled(message: string, bucket: TokenBucket): Refused {
  return { ok: false, code: 'THROTTLED', message, retryAfterSeconds: bucket.secondsToNextToken() };
}
