/**
 * The CSC API's limits per caller, as the CSC web ACL's rate-based rules set them on AWS
 * (cdk/lib/constructs/csc-api-limits.ts): per source address on every method, lower per source on the
 * authorization endpoints, and per client (its `client_id`, or its HTTP Basic credentials under
 * oauth2/). Each key has a token bucket holding a minute's worth and refilled at the same average rate.
 * A caller refused for one limit takes from none of the others.
 */
import type { IncomingMessage } from 'node:http';
import type { CscCallerLimits } from '@pipeline/config';
import { CSC_AUTHORIZE_RESOURCES } from '@pipeline/resources';
import { TokenBucket } from './token-bucket';

/** Keys kept per limit before the oldest are forgotten (a forgotten key starts with a full bucket). */
const MAX_KEYS = 10_000;

export type CscCallerDecision =
  | { readonly ok: true }
  | { readonly ok: false; readonly message: string; readonly retryAfterSeconds: number };

export class CscCallers {
  private readonly buckets = new Map<string, TokenBucket>();

  public constructor(
    private readonly limits: CscCallerLimits,
    private readonly clock?: () => number,
  ) {}

  /** `resource` is the CSC method's resource (`/oauth2/authorize`), `source` the peer's address. */
  public admit(
    req: IncomingMessage,
    resource: string,
    source: string,
    url: URL,
    body: Buffer,
  ): CscCallerDecision {
    const checks: Array<{ key: string; perMinute: number; message: string }> = [
      {
        key: `source ${source}`,
        perMinute: this.limits.sourcePerMinute,
        message: 'too many requests from this source',
      },
    ];
    if (CSC_AUTHORIZE_RESOURCES.includes(resource)) {
      checks.push({
        key: `authorize ${source}`,
        perMinute: this.limits.authorizeSourcePerMinute,
        message: 'too many authorization requests from this source',
      });
    }
    const client = clientOf(req, resource, url, body);
    if (client !== undefined) {
      checks.push({
        key: `client ${client}`,
        perMinute: this.limits.clientPerMinute,
        message: 'too many requests for this client',
      });
    }
    const buckets = checks.map((c) => ({ ...c, bucket: this.bucket(c.key, c.perMinute) }));
    const full = buckets.find((b) => !b.bucket.ready());
    if (full) {
      return {
        ok: false,
        message: `${full.message}, retry later`,
        retryAfterSeconds: full.bucket.secondsToNextToken(),
      };
    }
    for (const b of buckets) b.bucket.take();
    return { ok: true };
  }

  private bucket(key: string, perMinute: number): TokenBucket {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= MAX_KEYS) this.buckets.clear();
      bucket = new TokenBucket(perMinute / 60, perMinute, this.clock);
      this.buckets.set(key, bucket);
    }
    return bucket;
  }
}

/**
 * The client a request names: its `client_id` query argument, else (a form) its `client_id` field, else
 * under oauth2/ the user of its HTTP Basic credentials. Locally the form is read as well: WAF cannot
 * aggregate on a body field, so on AWS a posted client_id counts per source only.
 */
function clientOf(req: IncomingMessage, resource: string, url: URL, body: Buffer): string | undefined {
  const query = url.searchParams.get('client_id');
  if (query) return query;
  if ((req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
    const field = new URLSearchParams(body.toString('utf8')).get('client_id');
    if (field) return field;
  }
  const auth = req.headers.authorization ?? '';
  if (!resource.startsWith('/oauth2/') || !/^basic /i.test(auth)) return undefined;
  const user = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8').split(':')[0];
  try {
    return user ? decodeURIComponent(user) : undefined;
  } catch {
    return user;
  }
}
