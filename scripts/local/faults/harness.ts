/**
 * Fault-injection harness: the whole local pipeline (real handlers, SoftHSM, DynamoDB Local, ElasticMQ)
 * with the knobs the fault tests turn (short leases, consumers to kill, stand-ins of its own to restart),
 * a client that behaves like an e-service (retries with the same requestId, waits for a terminal answer),
 * and the checks every fault test ends with: terminal states, one certificate per request, the audit log.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { documentClient, sqsClient } from '@pipeline/adapters/aws';
import { RequestRepository, AuditRepository } from '@pipeline/adapters/dynamodb';
import { loadAuditPublicKey, verifyAuditStore } from '@pipeline/audit';
import { loadAuditConfig, loadAwsConfig } from '@pipeline/config';
import {
  certifications,
  eventsOf,
  keyUsage,
  type AuditEvent,
  type AuditVerificationReport,
  type CertificationReport,
} from '@pipeline/core/audit';
import { TABLES, tableName } from '@pipeline/resources';
import { call, verifySignedResult, type SampleRequest, type SignRequestView } from '../client';
import { LOCAL_DIR } from '../paths';
import { startLocalPipeline, type ConsumerProcess, type LocalPipeline } from '../runner/pipeline';
import { startStandIns, type StandIns } from '../stand-ins';
import { localToken } from '../token';
import pLimit from 'p-limit';
import { mulberry32 } from '../../simulate/rng';

export interface FaultPipelineOptions {
  /** Environment overrides on top of the fault defaults (pool targets, leases, consumers, ...). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Start DynamoDB Local and ElasticMQ for this pipeline alone, with their data on disk, so a test can
   * stop and restart them (the shared stand-ins of the Jest run must never go down under other tests).
   */
  readonly ownStandIns?: boolean;
}

export interface FaultPipeline {
  readonly pipeline: LocalPipeline;
  /** Every log line of the pipeline and its consumer processes. */
  readonly lines: string[];
  /** The stand-ins this pipeline owns (ownStandIns), to stop and restart. */
  readonly standIns?: StandIns;
  readonly doc: DynamoDBDocumentClient;
  /** The pipeline's sign request records, read directly (what the API does not show, e.g. requeues). */
  readonly requests: RequestRepository;
  stop(): Promise<void>;
}

/**
 * Leases and visibility timeouts of a few seconds, so work of a killed consumer or of a delivery that
 * lost its dependencies comes back within the test (AWS's are a minute or more).
 */
const FAULT_DEFAULTS: Record<string, string> = {
  PORT: '0',
  LOCAL_KEYGEN_INTERVAL_SECONDS: '3600',
  LOCAL_ACCESS_LOG: '0',
  LOCAL_CONSUMERS: '2',
  LOCAL_VISIBILITY_TIMEOUT_SECONDS: '3',
  SIGN_ATTEMPT_LEASE_SECONDS: '4',
  // The reconciler recovers a request whose message was lost once it is quiet for longer than a message's
  // deliveries can take (visibility x 5 receives; the tests use 3-4 s visibilities).
  RECONCILE_STALE_AFTER_SECONDS: '25',
  LOCAL_RECONCILE_INTERVAL_SECONDS: '2',
  POOL_SHARDS: '2',
  LOG_LEVEL: 'WARN',
};

export async function startFaultPipeline(options: FaultPipelineOptions = {}): Promise<FaultPipeline> {
  const lines: string[] = [];
  let standIns: StandIns | undefined;
  let dataDir: string | undefined;
  if (options.ownStandIns) {
    dataDir = mkdtempSync(join(tmpdir(), 'faults-'));
    const {
      AWS_ENDPOINT_URL: _a,
      AWS_ENDPOINT_URL_DYNAMODB: _d,
      AWS_ENDPOINT_URL_SQS: _s,
      ...env
    } = process.env;
    standIns = await startStandIns(
      { dynamodbDataDir: join(dataDir, 'dynamodb'), sqsDataDir: join(dataDir, 'sqs') },
      env,
    );
    // The pipeline takes configured endpoints as they are and starts nothing of its own.
    Object.assign(process.env, standIns.env());
  }
  const pipeline = await startLocalPipeline({
    resourcePrefix: `faults-${randomBytes(3).toString('hex')}-`,
    log: (line) => lines.push(line),
    env: { ...FAULT_DEFAULTS, ...(options.env ?? {}) },
  });
  const doc = documentClient(loadAwsConfig(process.env));
  return {
    pipeline,
    lines,
    standIns,
    doc,
    requests: new RequestRepository(doc, { tableName: pipeline.env[TABLES.requests.envVar] }),
    stop: async () => {
      await pipeline.stop();
      doc.destroy();
      await standIns?.stop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Messages waiting and in flight on the sign request queue and its dead-letter queue. */
export async function queueDepths(pipeline: LocalPipeline): Promise<Record<string, string | undefined>> {
  const sqs = sqsClient(loadAwsConfig(process.env));
  try {
    const depth = async (url: string): Promise<Record<string, string> | undefined> =>
      (
        await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: url,
            AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
          }),
        )
      ).Attributes;
    const [queue, dlq] = await Promise.all([depth(pipeline.queueUrl), depth(pipeline.deadLetterQueueUrl)]);
    return {
      queue: `${queue?.ApproximateNumberOfMessages}+${queue?.ApproximateNumberOfMessagesNotVisible} in flight`,
      deadLetter: dlq?.ApproximateNumberOfMessages,
    };
  } finally {
    sqs.destroy();
  }
}

export function liveConsumers(pipeline: LocalPipeline): ConsumerProcess[] {
  return pipeline.consumers.filter((c) => c.child.exitCode === null && c.child.signalCode === null);
}

/**
 * SIGKILLs a consumer as a crashed execution environment dies: the consumer process runs the signer
 * handler itself (node with tsx's loader), so the signal lands on it; anything it started dies with it.
 */
export async function sigkillConsumer(consumer: ConsumerProcess): Promise<number[]> {
  const pid = consumer.child.pid;
  if (pid === undefined) return [];
  const tree = [...descendants(pid), pid];
  for (const p of tree) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await consumer.exited;
  while (tree.some(isAlive)) await sleep(20);
  return tree;
}

function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
  return children.flatMap((c) => [...descendants(c), c]);
}

/** Running (a zombie awaiting its reaper counts as dead: it holds no sessions and does no work). */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Stops the live consumers gracefully and returns what each reported about its HSM session objects
 * (the consumer logs the count after its last batch). Waits for 'close', so every log line is in.
 */
export async function stopConsumersAndCountSessionObjects(fault: FaultPipeline): Promise<number[]> {
  const live = liveConsumers(fault.pipeline);
  const from = fault.lines.length;
  await Promise.all(
    live.map(async ({ child }) => {
      const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
      child.kill('SIGTERM');
      await closed;
    }),
  );
  return fault.lines
    .slice(from)
    .map((line) => /consumer stopped: hsm session objects (\d+)/.exec(line)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number);
}

/** The ids among `ids` whose requests the reconciler requeued (it found them open with no message). */
export async function requeuedIds(fault: FaultPipeline, ids: readonly string[]): Promise<string[]> {
  const found = await runAll(ids, 8, async (id) => ((await fault.requests.get(id))?.requeues ? [id] : []));
  return found.flat();
}

/** SoftHSM's own token files (`token.object`, one per token), as they are now. */
export function snapshotTokenFiles(): Map<string, Buffer> {
  const { tokenDir } = localToken();
  return new Map(
    readdirSync(tokenDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(tokenDir, d.name, 'token.object')))
      .map((d) => {
        const file = join(tokenDir, d.name, 'token.object');
        return [file, readFileSync(file)] as const;
      }),
  );
}

/**
 * Restores any token file a kill truncated since the snapshot and returns their paths. SoftHSM rewrites
 * `token.object` on every login (only a generation counter changes), so a SIGKILL during a login would
 * leave it empty and the token unusable; a kill test asserts this returned nothing, and calls it again
 * when it ends in any case, so a failed run never costs the developer the local token.
 */
export function restoreTruncatedTokenFiles(snapshot: ReadonlyMap<string, Buffer>): string[] {
  const restored: string[] = [];
  for (const [file, bytes] of snapshot) {
    if (existsSync(file) && statSync(file).size >= bytes.length) continue;
    writeFileSync(file, bytes, { mode: 0o600 });
    restored.push(file);
  }
  return restored;
}

/** The token's persistent objects (SoftHSM keeps one file per token object): none may appear or vanish. */
export function tokenObjectFiles(): string[] {
  const { tokenDir } = localToken();
  return readdirSync(tokenDir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => readdirSync(join(tokenDir, d.name)).map((f) => `${d.name}/${f}`))
    .filter((f) => f.endsWith('.object'))
    .sort();
}

export interface Submitted {
  readonly request: SampleRequest;
  readonly id: string;
  /** Answers other than 200/202 the client saw (and retried) before the request was accepted. */
  readonly refusals: ReadonlyArray<{ status: number; code?: string; message?: string }>;
}

/** A submission that was never accepted before the deadline. */
export class NotAcceptedError extends Error {
  public override readonly name = 'NotAcceptedError';
}

/**
 * Submits like a well-behaved e-service: every request carries its own requestId, and 429/5xx answers or
 * transport errors are retried with the same id (a replay of an accepted one answers 200 with its id).
 */
export async function submit(
  url: string,
  apiKey: string,
  request: SampleRequest,
  deadline: number,
): Promise<Submitted> {
  const refusals: Array<{ status: number; code?: string; message?: string }> = [];
  for (;;) {
    const res = await call<{ id: string; error?: { code: string; message: string } }>(
      `${url}/sign-requests`,
      {
        apiKey,
        body: request.body,
      },
    ).catch(() => undefined);
    if (res && (res.status === 202 || res.status === 200)) return { request, id: res.body.id, refusals };
    refusals.push({
      status: res?.status ?? 0,
      code: res?.body?.error?.code,
      message: res?.body?.error?.message,
    });
    if (res && res.status < 500 && res.status !== 429) {
      throw new NotAcceptedError(`refused for good: ${res.status} ${res.body?.error?.code ?? ''}`);
    }
    if (Date.now() > deadline) {
      throw new NotAcceptedError(
        `not accepted after ${refusals.length} tries, last: ${JSON.stringify(refusals.at(-1))}`,
      );
    }
    await sleep(250);
  }
}

/**
 * Long-polls every id until it is signed or failed, tolerating 5xx and transport errors (a stand-in may
 * be down). Ids still not terminal at the deadline come back with their last seen status.
 */
export async function waitForTerminal(
  url: string,
  apiKey: string,
  ids: readonly string[],
  deadline: number,
): Promise<Map<string, SignRequestView | undefined>> {
  const views = new Map<string, SignRequestView | undefined>();
  await runAll(ids, 32, async (id) => {
    let last: SignRequestView | undefined;
    while (Date.now() < deadline) {
      const wait = Math.max(0, Math.min(10, Math.floor((deadline - Date.now()) / 1000)));
      const res = await call<SignRequestView>(`${url}/sign-requests/${id}?wait=${wait}`, { apiKey }).catch(
        () => undefined,
      );
      if (res?.status === 200) {
        last = res.body;
        if (last.status === 'signed' || last.status === 'failed') break;
      } else {
        await sleep(250);
      }
    }
    views.set(id, last);
  });
  return views;
}

export async function runAll<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  return pLimit(limit).map(items, fn);
}

/**
 * The suites' randomness (victims, delays, flipped bits), seeded so that a run can be repeated: the seed
 * is FAULTS_SEED when set, else a fixed one; a failing suite prints it.
 */
export function seededRandom(
  seed = Number(process.env.FAULTS_SEED ?? 20261124),
): (() => number) & { seed: number } {
  return Object.assign(mulberry32(seed), { seed });
}

/** A pacing loop behind its schedule asks for a negative wait: it goes on at once (Node warns otherwise). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

export interface CertificateItem {
  readonly requestId: string;
  readonly serialHex: string;
  readonly issuedAt: number;
  readonly certificatePem?: string;
  /** A request item: the attempt its certificate was released to as it was issued. */
  readonly attemptId?: string;
  /** A request item: when its certificate was released to that attempt (its issuance). */
  readonly releasedAt?: number;
  /** A request item: the serial its certificate replaced (a takeover's replacement). */
  readonly supersedes?: string;
  /** A serial item: why it was revoked, if it was. */
  readonly revocationReason?: string;
  /** A serial item revoked `superseded`: the serial that replaced it. */
  readonly supersededBy?: string;
}

/** Every item of the certificates table: `request` items (one per request) and `serial` items. */
export async function scanCertificates(
  doc: DynamoDBDocumentClient,
): Promise<{ byRequest: CertificateItem[]; serials: CertificateItem[] }> {
  const items = await scanAll(doc, tableName(TABLES.certificates));
  const pick = (kind: string): CertificateItem[] =>
    items
      .filter((i) => i.kind === kind)
      .map((i) => ({
        requestId: String(i.requestId),
        serialHex: String(i.serialHex),
        issuedAt: Number(i.issuedAt),
        certificatePem: typeof i.certificatePem === 'string' ? i.certificatePem : undefined,
        attemptId: typeof i.attemptId === 'string' ? i.attemptId : undefined,
        releasedAt: typeof i.releasedAt === 'number' ? i.releasedAt : undefined,
        supersedes: typeof i.supersedes === 'string' ? i.supersedes : undefined,
        revocationReason: typeof i.revocationReason === 'string' ? i.revocationReason : undefined,
        supersededBy: typeof i.supersededBy === 'string' ? i.supersededBy : undefined,
      }));
  return { byRequest: pick('request'), serials: pick('serial') };
}

/**
 * Requests with more than one serial, but the takeovers' replacements: every serial of the request in its
 * superseded chain. One valid certificate per request.
 */
export function certifiedTwice(certificates: {
  byRequest: readonly CertificateItem[];
  serials: readonly CertificateItem[];
}): Record<string, number> {
  const chains = new Map(supersededChains(certificates).map((c) => [c.requestId, c.serials.length]));
  return Object.fromEntries(
    Object.entries(duplicates(certificates.serials.map((c) => c.requestId))).filter(
      ([requestId, n]) => chains.get(requestId) !== n,
    ),
  );
}

/**
 * The takeovers' replacements: requests whose record names a certificate that supersedes an earlier
 * serial of the same request, followed back (each earlier one revoked `superseded` by the next) to the
 * first. `serials` in issuance order, the last the request's standing certificate.
 */
export function supersededChains(certificates: {
  byRequest: readonly CertificateItem[];
  serials: readonly CertificateItem[];
}): Array<{ requestId: string; serials: string[] }> {
  const serials = new Map(certificates.serials.map((s) => [s.serialHex, s]));
  const replacedBy = new Map(
    certificates.serials.flatMap((s) => (s.supersededBy === undefined ? [] : [[s.supersededBy, s] as const])),
  );
  return certificates.byRequest.flatMap((c) => {
    const current = serials.get(c.serialHex);
    if (current?.requestId !== c.requestId || current.revocationReason !== undefined) return [];
    const chain = [c.serialHex];
    for (let earlier = replacedBy.get(c.serialHex); earlier; earlier = replacedBy.get(earlier.serialHex)) {
      if (earlier.requestId !== c.requestId || earlier.revocationReason !== 'superseded') return [];
      chain.unshift(earlier.serialHex);
    }
    // The request's record names the serial its certificate replaced, as the serials do.
    return chain.length > 1 && chain[chain.length - 2] === c.supersedes
      ? [{ requestId: c.requestId, serials: chain }]
      : [];
  });
}

export async function scanAll(
  doc: DynamoDBDocumentClient,
  table: string,
): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/** How often each value occurs. */
export function tally(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

/** Values that occur more than once, with their counts (empty when all are unique). */
export function duplicates(values: readonly string[]): Record<string, number> {
  return Object.fromEntries(Object.entries(tally(values)).filter(([, n]) => n > 1));
}

export interface AuditSummary {
  readonly events: AuditEvent[];
  readonly report: AuditVerificationReport;
  /** Requests, assertions and keys certified more than once, by the log alone (`npm run audit -- verify`). */
  readonly certified: CertificationReport;
}

/** Reads the pipeline's whole audit log, parses its events and verifies chains and checkpoints. */
export async function readAudit(doc: DynamoDBDocumentClient): Promise<AuditSummary> {
  const config = loadAuditConfig(process.env);
  const store = new AuditRepository(doc, { tableName: tableName(TABLES.audit) });
  const publicKey = await loadAuditPublicKey({
    file: join(LOCAL_DIR, 'audit', 'audit-key.pem'),
    keyLabel: config.keyLabel,
  });
  const report = await verifyAuditStore(store, config.chains, publicKey);
  const log = await store.readAll();
  return { events: eventsOf(log), report, certified: certifications(log) };
}

/**
 * Pool keys tied to more than one request according to the audit log (claimed by one and signing for
 * another, or claimed twice), with the number of requests. Empty when every key served one request.
 */
export function keysUsedTwice(events: readonly AuditEvent[]): Record<string, number> {
  const usage = keyUsage(events);
  return Object.fromEntries(usage.reused.map((keyId) => [keyId, usage.requestsByKey.get(keyId)!.length]));
}

/**
 * Every request ended: `signed` or `failed` with a code and message (a stuck one is named with its status
 * and the queues' depths, to tell a lost message from a dead-lettered one), and every signed result's
 * signature and chain verify. Returns the signed requests.
 */
export async function expectAllEnded<S extends Submitted>(
  pipeline: LocalPipeline,
  submitted: readonly S[],
  views: ReadonlyMap<string, SignRequestView | undefined>,
): Promise<S[]> {
  const notTerminal = submitted.filter((s) => !['signed', 'failed'].includes(views.get(s.id)?.status ?? ''));
  const queues = notTerminal.length > 0 ? await queueDepths(pipeline) : {};
  expect(
    notTerminal.map((s) => `${s.id}: ${views.get(s.id)?.status ?? 'unknown'}; ${JSON.stringify(queues)}`),
  ).toEqual([]);
  const failedWithoutReason = submitted.filter((s) => {
    const v = views.get(s.id)!;
    return v.status === 'failed' && !(v.error?.code && v.error.message);
  });
  expect(failedWithoutReason.map((s) => s.id)).toEqual([]);
  const rootPem = readFileSync(join(LOCAL_DIR, 'ca', 'root.pem'), 'utf8');
  const signed = submitted.filter((s) => views.get(s.id)!.status === 'signed');
  const bad = signed
    .map((s) => ({ id: s.id, ...verifySignedResult(s.request, views.get(s.id)!, rootPem) }))
    .filter((r) => !r.ok);
  expect(bad).toEqual([]);
  return signed;
}

/**
 * None duplicated: at most one certificate in force per request, each signed request's certificate the
 * one the CA recorded for it, an intact audit log, and no pool key tied to two requests in it. Returns
 * the audit log's events for further checks.
 */
export async function expectNoneDuplicated(
  doc: DynamoDBDocumentClient,
  signed: readonly { readonly id: string }[],
  views: ReadonlyMap<string, SignRequestView | undefined>,
): Promise<AuditEvent[]> {
  const certificates = await scanCertificates(doc);
  expect(certifiedTwice(certificates)).toEqual({});
  const recorded = new Map(certificates.byRequest.map((c) => [c.requestId, c.certificatePem]));
  const mismatched = signed.filter(
    (s) => recorded.get(s.id)?.trim() !== views.get(s.id)?.certificate?.trim(),
  );
  expect(mismatched.map((s) => s.id)).toEqual([]);
  const audit = await readAudit(doc);
  expect(audit.report.issues).toEqual([]);
  expect(audit.report.intact).toBe(true);
  // The log agrees with the tables: no repeat but the takeovers' replacements the certificate table shows,
  // link by link (each serial revoked `superseded` before the next of its request was issued).
  expect(audit.certified.repeated).toEqual([]);
  const link = (requestId: string, revoked: string, next: string): string =>
    `${requestId}: ${revoked} -> ${next}`;
  expect(audit.certified.superseded.map((p) => link(p.requestId, p.revokedSerial, p.serial)).sort()).toEqual(
    supersededChains(certificates)
      .flatMap((c) => c.serials.slice(1).map((next, n) => link(c.requestId, c.serials[n], next)))
      .sort(),
  );
  expect(keysUsedTwice(audit.events)).toEqual({});
  return audit.events;
}
