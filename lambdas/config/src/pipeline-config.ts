import { MAX_BODY_BYTES, QUEUES, SIGNER_EVENT_SOURCE } from '@pipeline/resources';
import {
  apiLimitsProblem,
  DEFAULT_CSC_CALLER_LIMITS,
  type ApiLimits,
  type CscCallerLimits,
} from './api-limits';
import { int, str } from './readers';
import { ConfigError } from './errors';
import type { Env } from './types';
import { ENV } from './env-names';

/** Settings of the request path: API, queue, signer consumer, CA invocation, and the local runner. */
export interface PipelineConfig {
  /** URL of the sign request queue (the CDK stack sets it; the local runner creates the queue). */
  readonly queueUrl: string;
  /** Name (or ARN) of the CA function the signer invokes (issuance). */
  readonly caFunctionName: string;
  /**
   * The TSA of B-T and higher: the service's own (its function, invoked like the CA) or an external one
   * by URL (RFC 3161 over HTTP) with the trust anchors its tokens must chain to.
   */
  readonly timeStamping: TimeStampingSource;
  /** Name (or ARN) of the OCSP responder function the signer asks for a new leaf's status (B-LT). */
  readonly ocspFunctionName: string;
  /** Name (or ARN) of the revocation function the API and operators invoke. */
  readonly revokeFunctionName: string;
  /** Records processed concurrently within one signer batch. */
  readonly signerConcurrency: number;
  /** Most records per signer batch (the local poller; on AWS the event source mapping's batch size). */
  readonly signerBatchSize: number;
  /** How long the local poller gathers a batch after its first record (ms; 0 = what one receive gets). */
  readonly signerBatchingWindowMs: number;
  /**
   * The signer's certificate requests go to the CA in batches: at most `caBatchMax` per invocation, sent
   * when every attempt in flight has asked or `caBatchWindowMs` after the first one.
   */
  readonly caBatchWindowMs: number;
  readonly caBatchMax: number;
  /**
   * The signer's request record transitions (start, finish) go to the table together: one transaction
   * and one read once every record in flight has asked, or `recordBatchWindowMs` after the first.
   */
  readonly recordBatchWindowMs: number;
  /** Largest accepted request body in bytes (the pool policy and retention live in the pool config). */
  readonly maxBodyBytes: number;
  /**
   * API key id -> the IAM principal (API Gateway's `userArn`) that may use it (API_KEY_PRINCIPALS, set by
   * the CDK app); undefined where the API key is the only credential (the local gateway).
   */
  readonly apiKeyPrincipals?: ReadonlyMap<string, string>;
  /**
   * The API counts demand in memory and writes the hourly counters when the oldest pending count is this
   * old (ms) or `demandFlushPending` requests are pending; 0 writes one counter update per request.
   */
  readonly demandFlushMs: number;
  readonly demandFlushPending: number;
  readonly local: {
    readonly port: number;
    /** The local gateway's stage throttle (per method) and per-client throttle and daily quota. */
    readonly limits: ApiLimits;
    /** The local gateway's CSC limits per source and per client (the CSC web ACL's on AWS). */
    readonly cscLimits: CscCallerLimits;
    /** Consumer processes the local runner starts (each one plays the event source mapping). */
    readonly consumers: number;
    /**
     * Host the CA function in a child process of its own (LOCAL_CA_PROCESS=1) instead of the runner's: on
     * 2 cores it cost ~6% more CPU per request than it spread (docs/benchmarks.md), so off by default.
     */
    readonly caProcess: boolean;
    /**
     * Every call of a method that takes an API key must be SigV4-signed by a client's credentials
     * (LOCAL_API_REQUIRE_SIGV4=1), as IAM authorization requires on AWS; otherwise an unsigned call acts
     * as its API key's own client.
     */
    readonly requireSigV4: boolean;
    /** Batches each consumer process handles at once. */
    readonly pollerConcurrency: number;
    /** Shorter than AWS's so that work of a killed consumer comes back in seconds. */
    readonly visibilityTimeoutSeconds: number;
    /** Keygen schedule period locally, seconds. */
    readonly keygenIntervalSeconds: number;
    /** Reconciler schedule period locally, seconds. */
    readonly reconcileIntervalSeconds: number;
    /** CRL publication period locally, seconds (revocations also publish at once). */
    readonly crlIntervalSeconds: number;
  };
}

export type TimeStampingSource =
  | { readonly kind: 'function'; readonly functionName: string }
  | { readonly kind: 'url'; readonly url: string; readonly trustAnchorsFile: string };

export function loadPipelineConfig(env: Env): PipelineConfig {
  return {
    queueUrl: str(env, QUEUES.signRequests.envVar, ''),
    caFunctionName: str(env, ENV.CA_FUNCTION_NAME, 'ca'),
    timeStamping: timeStampingSource(env),
    ocspFunctionName: str(env, ENV.OCSP_FUNCTION_NAME, 'ocsp'),
    revokeFunctionName: str(env, ENV.REVOKE_FUNCTION_NAME, 'revoke'),
    signerConcurrency: int(env, ENV.SIGNER_CONCURRENCY, 10, 1, 100),
    signerBatchSize: int(env, 'SIGNER_BATCH_SIZE', SIGNER_EVENT_SOURCE.batchSize, 1, 10),
    signerBatchingWindowMs: int(
      env,
      'SIGNER_BATCHING_WINDOW_MS',
      SIGNER_EVENT_SOURCE.maxBatchingWindowSeconds * 1000,
      0,
      300_000,
    ),
    caBatchWindowMs: int(env, 'CA_BATCH_WINDOW_MS', 20, 0, 1000),
    caBatchMax: int(env, 'CA_BATCH_MAX', 25, 1, 100),
    recordBatchWindowMs: int(env, 'RECORD_BATCH_WINDOW_MS', 10, 0, 1000),
    maxBodyBytes: int(env, 'API_MAX_BODY_BYTES', MAX_BODY_BYTES, 256, 1024 * 1024),
    apiKeyPrincipals: apiKeyPrincipals(env),
    demandFlushMs: int(env, 'DEMAND_FLUSH_MS', 5000, 0, 300_000),
    demandFlushPending: int(env, 'DEMAND_FLUSH_PENDING', 100, 1, 100_000),
    local: {
      port: int(env, 'PORT', 8080, 0, 65535),
      limits: localApiLimits(env),
      cscLimits: {
        sourcePerMinute: int(
          env,
          'LOCAL_CSC_SOURCE_PER_MINUTE',
          DEFAULT_CSC_CALLER_LIMITS.sourcePerMinute,
          1,
          1_000_000,
        ),
        authorizeSourcePerMinute: int(
          env,
          'LOCAL_CSC_AUTHORIZE_SOURCE_PER_MINUTE',
          DEFAULT_CSC_CALLER_LIMITS.authorizeSourcePerMinute,
          1,
          1_000_000,
        ),
        clientPerMinute: int(
          env,
          'LOCAL_CSC_CLIENT_PER_MINUTE',
          DEFAULT_CSC_CALLER_LIMITS.clientPerMinute,
          1,
          1_000_000,
        ),
      },
      consumers: int(env, 'LOCAL_CONSUMERS', 1, 0, 16),
      caProcess: str(env, 'LOCAL_CA_PROCESS', '0') === '1',
      requireSigV4: str(env, 'LOCAL_API_REQUIRE_SIGV4', '0') === '1',
      pollerConcurrency: int(env, 'LOCAL_POLLER_CONCURRENCY', 4, 1, 64),
      visibilityTimeoutSeconds: int(env, 'LOCAL_VISIBILITY_TIMEOUT_SECONDS', 10, 1, 43200),
      keygenIntervalSeconds: int(env, 'LOCAL_KEYGEN_INTERVAL_SECONDS', 60, 1, 86400),
      reconcileIntervalSeconds: int(env, 'LOCAL_RECONCILE_INTERVAL_SECONDS', 30, 1, 86400),
      crlIntervalSeconds: int(env, 'LOCAL_CRL_INTERVAL_SECONDS', 300, 1, 86400),
    },
  };
}

/**
 * Higher than the stack's defaults, so that a benchmark's single client is not what it measures; the
 * same rule as in AWS: a client's limits below the stage's.
 */
function localApiLimits(env: Env): ApiLimits {
  const limits: ApiLimits = {
    stage: {
      rateLimit: int(env, 'LOCAL_STAGE_RATE_LIMIT', 1000, 1, 100_000),
      burstLimit: int(env, 'LOCAL_STAGE_BURST_LIMIT', 2000, 1, 100_000),
    },
    client: {
      rateLimit: int(env, 'LOCAL_CLIENT_RATE_LIMIT', 500, 1, 100_000),
      burstLimit: int(env, 'LOCAL_CLIENT_BURST_LIMIT', 1000, 1, 100_000),
      quotaPerDay: int(env, 'LOCAL_CLIENT_QUOTA_PER_DAY', 0, 0, 1_000_000_000),
    },
  };
  const problem = apiLimitsProblem(limits);
  if (problem) {
    const variable = problem.limit === 'rate' ? 'LOCAL_CLIENT_RATE_LIMIT' : 'LOCAL_CLIENT_BURST_LIMIT';
    throw new ConfigError(`${variable}: ${problem.message}`, variable);
  }
  return limits;
}

/** TSA_URL (with TSA_TRUST_ANCHORS, a PEM file) for an external TSA; else TSA_FUNCTION_NAME (default `tsa`). */
function timeStampingSource(env: Env): TimeStampingSource {
  const url = str(env, 'TSA_URL', '');
  if (!url) return { kind: 'function', functionName: str(env, ENV.TSA_FUNCTION_NAME, 'tsa') };
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !['http:', 'https:'].includes(parsed.protocol)) {
    throw new ConfigError('TSA_URL must be an http(s) URL', 'TSA_URL');
  }
  const trustAnchorsFile = str(env, 'TSA_TRUST_ANCHORS', '');
  if (!trustAnchorsFile) {
    throw new ConfigError(
      'TSA_URL needs TSA_TRUST_ANCHORS: a PEM file of the roots its tokens chain to',
      'TSA_TRUST_ANCHORS',
    );
  }
  return { kind: 'url', url, trustAnchorsFile };
}

/** API_KEY_PRINCIPALS: JSON `{"<API key id>": "<principal ARN>", ...}` ("" binds a key to no one). */
function apiKeyPrincipals(env: Env): ReadonlyMap<string, string> | undefined {
  const name = ENV.API_KEY_PRINCIPALS;
  const text = str(env, name, '');
  if (!text) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (
    !parsed ||
    typeof parsed !== 'object' ||
    Array.isArray(parsed) ||
    !Object.values(parsed).every((v) => typeof v === 'string')
  ) {
    throw new ConfigError(`${name} must be a JSON object of API key id -> principal ARN`, name);
  }
  return new Map(
    Object.entries(parsed as Record<string, string>).filter(([, principal]) => principal !== ''),
  );
}
