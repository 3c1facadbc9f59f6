/**
 * How much the API admits, in API Gateway's terms: a stage throttle, which API Gateway applies to each
 * method of the stage, and per client (its usage plan) a throttle over all methods and a daily quota.
 * The CDK app (context keys) and the local gateway (LOCAL_* variables) set the same values and keep the
 * same rule: a client's limits are below the stage's, so one client at its limit leaves room for the
 * others.
 */
export interface ThrottleLimits {
  /** Steady requests per second. */
  readonly rateLimit: number;
  /** Requests above the steady rate a bucket saves up. */
  readonly burstLimit: number;
}

export interface ApiLimits {
  readonly stage: ThrottleLimits;
  /** Each client's own; `quotaPerDay` 0: no quota. */
  readonly client: ThrottleLimits & { readonly quotaPerDay: number };
}

/** Which client limit breaks the rule (`rate`, `burst`) and why, or undefined when none does. */
export function apiLimitsProblem(
  limits: ApiLimits,
): { readonly limit: 'rate' | 'burst'; readonly message: string } | undefined {
  if (limits.client.rateLimit >= limits.stage.rateLimit) {
    return {
      limit: 'rate',
      message:
        "a client's rate limit must be below the stage's, so that one client leaves room for the others",
    };
  }
  if (limits.client.burstLimit >= limits.stage.burstLimit) {
    return {
      limit: 'burst',
      message:
        "a client's burst limit must be below the stage's, so that one client leaves room for the others",
    };
  }
  return undefined;
}

/**
 * The CSC API's limits per caller, requests per minute: its methods take no API key, so no usage plan
 * tells callers apart. On AWS these are the CSC web ACL's rate-based rules (settings `csc*PerMinute`);
 * the local gateway plays them with a token bucket per key at the same average rate (LOCAL_CSC_*).
 */
export interface CscCallerLimits {
  /** Every CSC method, per source address. */
  readonly sourcePerMinute: number;
  /** oauth2/authorize and oauth2/pushed_authorize (reachable before any authentication), per source address. */
  readonly authorizeSourcePerMinute: number;
  /** Per client: the `client_id` query argument, or the client's HTTP Basic credentials. */
  readonly clientPerMinute: number;
}

export const DEFAULT_CSC_CALLER_LIMITS: CscCallerLimits = {
  sourcePerMinute: 600,
  authorizeSourcePerMinute: 60,
  clientPerMinute: 600,
};
