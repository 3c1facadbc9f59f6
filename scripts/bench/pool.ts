/**
 * `npm run bench -- pool [--n 30] [--key-type RSA-2048]`: per-request cost of the pool path against the
 * on-the-fly path, measured in one run against the local stand-ins (DynamoDB Local, SoftHSM).
 *
 * Every path runs the real signing core one request at a time (processSignRequest: request record
 * transitions, claim or keygen, sign, CSR signed by the same key, certificate, destroy):
 *   - on the fly: an empty pool table (every shard answers empty), the `fallback` policy generates a
 *     non-extractable key per request;
 *   - pool: a conditional-delete claim per request, then unwrap;
 *   - pool + prefetch: PrefetchingKeyClaimer, the next key is claimed while this request works.
 * The paths take turns request by request, so load from anything else on the machine hits all three
 * alike. Reported per path: median and p99 of
 *   - key + sign: key acquisition (claim + unwrap, or keygen) plus the document signature, the part the
 *     pool exists to speed up;
 *   - request: the whole request as the signer sees it (adds record reads/writes, CSR and issuing, which
 *     cost the same on both paths).
 * The certificate comes from the real CA in process (lambdas/ca: request read, CSR check, leaf signed by
 * the issuing CA key in SoftHSM, certificate records written with the audit entry of its event in one
 * transaction, as the CA function does), the same on every path.
 */
import { directAssertion } from '../local/idp/direct-assertions';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { documentClient, dynamoDbClient } from '@pipeline/adapters/aws';
import { AuditRepository, KeyPoolRepository, RequestRepository } from '@pipeline/adapters/dynamodb';
import { AuditLog } from '@pipeline/audit';
import { connectHsm } from '@pipeline/adapters/hsm';
import { loadAuditConfig, loadConfig } from '@pipeline/config';
import { InMemoryPoolMetrics, PrefetchingKeyClaimer, fillPool } from '@pipeline/core/pool';
import { defaultSignatureAlgorithm, isKeyType, type KeyType } from '@pipeline/core/shared';
import { processSignRequest, type SignRequestRecord, type SigningDeps } from '@pipeline/core/signing';
import { buildCsr } from '@pipeline/der';
import { TABLES } from '@pipeline/resources';
import { ensureTables } from '../local/resources';
import { createLocalCa } from '../local/local-ca';
import { startStandIns, type StandIns } from '../local/stand-ins';
import { finish, option, printTable, type Row } from './report';
import { median, msSince, percentile, round } from './stats';

const WARM_UP = 3;

interface Sample {
  readonly requestMs: number;
  readonly keyAndSignMs: number;
  readonly acquireKeyMs: number;
  /** The signing core's own stage timings (issue, csr, audit, destroy, ...), as stored on the record. */
  readonly stageMs: Readonly<Record<string, number>>;
}

type PathName = 'onTheFly' | 'pool' | 'poolPrefetch';
const MEASURES = ['acquireKeyMs', 'keyAndSignMs', 'requestMs'] as const;
type Figures = Record<PathName, Record<(typeof MEASURES)[number], { median: number; p99: number }>>;

export async function run(args: string[]): Promise<void> {
  const n = Number(option(args, 'n') ?? '30');
  const keyType = option(args, 'key-type') ?? 'RSA-2048';
  if (!isKeyType(keyType) || !Number.isInteger(n) || n < 1) {
    throw new Error('usage: npm run bench -- pool [--n <count>] [--key-type RSA-2048|...]');
  }
  const { standIns, emptyPoolTable } = await benchTables();
  const config = loadConfig(process.env);
  const doc = documentClient(config.aws);
  // One session: requests run one at a time, as a single request would see the HSM.
  const hsm = await connectHsm({ ...config.hsm, sessionPoolSize: 1 }, config.aws);
  const { base, pool, requests, metrics } = await signingCore(config, doc, hsm);
  const prefetcher = new PrefetchingKeyClaimer(pool);

  const oneRequest = async (deps: SigningDeps): Promise<Sample & { pooled: boolean }> => {
    const record = benchRecord(keyType);
    await requests.create({ ...record, identityAssertion: directAssertion(record) });
    const start = process.hrtime.bigint();
    const outcome = await processSignRequest(deps, record.id);
    const requestMs = msSince(start);
    if (outcome.status !== 'signed' || !outcome.stages) throw new Error(`bench request ${outcome.status}`);
    return {
      requestMs,
      acquireKeyMs: outcome.stages.acquireKeyMs,
      keyAndSignMs: outcome.stages.acquireKeyMs + outcome.stages.signMs,
      stageMs: (outcome.record.stageMs ?? {}) as Record<string, number>,
      pooled: outcome.record.pooledKey === true,
    };
  };

  const emptyPool = new KeyPoolRepository(doc, { tableName: emptyPoolTable, shards: config.pool.shards });
  const paths = [
    { name: 'onTheFly', deps: { ...base, pool: emptyPool }, pooled: false },
    { name: 'pool', deps: base, pooled: true },
    { name: 'poolPrefetch', deps: { ...base, pool: prefetcher }, pooled: true },
  ] as const;
  const samples: Record<PathName, Sample[]> = {
    onTheFly: [],
    pool: [],
    poolPrefetch: [],
  };

  let fillMs = 0;
  const perPath = n + WARM_UP;
  try {
    // Keys for both pool paths, plus the one the prefetcher holds at the end.
    const wanted = 2 * perPath + 1;
    const fillStart = process.hrtime.bigint();
    const filled = await fillPool(
      { hsm, pool, metrics },
      {
        keyType,
        count: wanted,
        parallelism: 1,
        deadline: Date.now() + 20 * 60_000,
        wrapKeyLabel: config.hsm.wrapKeyLabel,
        hsmProfile: config.hsm.profile,
        maxAgeSeconds: config.pool.keyMaxAgeSeconds,
      },
    );
    fillMs = msSince(fillStart);
    if (filled.stored !== wanted) throw new Error(`pool fill stored ${filled.stored} of ${wanted}`);
    for (let i = 0; i < perPath; i++) {
      for (const path of paths) {
        const sample = await oneRequest(path.deps);
        if (sample.pooled !== path.pooled) throw new Error(`the ${path.name} path took the wrong key source`);
        if (i >= WARM_UP) samples[path.name].push(sample);
      }
    }
    await prefetcher.settled();
  } finally {
    await hsm.close();
    doc.destroy();
    await standIns?.stop();
  }
  report(keyType, n, samples, fillMs / (2 * perPath + 1));
}

/**
 * The real signing core's dependencies on the bench tables: the pool and request repositories, the local
 * CA in process, the `fallback` policy and a sub-millisecond clock.
 */
async function signingCore(
  config: ReturnType<typeof loadConfig>,
  doc: ReturnType<typeof documentClient>,
  hsm: Awaited<ReturnType<typeof connectHsm>>,
): Promise<{
  base: SigningDeps;
  pool: KeyPoolRepository;
  requests: RequestRepository;
  metrics: InMemoryPoolMetrics;
}> {
  const pool = new KeyPoolRepository(doc, {
    tableName: process.env[TABLES.keyPool.envVar]!,
    shards: config.pool.shards,
  });
  const requests = new RequestRepository(doc, { tableName: process.env[TABLES.requests.envVar]! });
  const { issuer } = await createLocalCa({
    hsm,
    doc,
    certificatesTable: process.env[TABLES.certificates.envVar]!,
    audit: new AuditLog(new AuditRepository(doc, { tableName: process.env[TABLES.audit.envVar]! }), {
      chains: loadAuditConfig(process.env).chains,
    }),
  });
  const metrics = new InMemoryPoolMetrics();
  // Sub-millisecond timestamps, so the stage timings of a few-ms path are not rounded away.
  const clock = (): number => performance.timeOrigin + performance.now();
  const base: SigningDeps = {
    requests,
    pool,
    hsm,
    buildCsr,
    issuer,
    metrics,
    clock,
    settings: {
      emptyPoolPolicy: 'fallback',
      retryAfterSeconds: config.pool.retryAfterSeconds,
      leaseMs: config.requests.attemptLeaseSeconds * 1000,
      hsmProfile: config.hsm.profile,
    },
  };
  return { base, pool, requests, metrics };
}

/**
 * The stand-ins when no endpoint is configured, and fresh tables (pool, requests, certificates, and an
 * empty pool table for the on-the-fly path) so nothing else is disturbed.
 */
async function benchTables(): Promise<{ standIns: StandIns | undefined; emptyPoolTable: string }> {
  let standIns: StandIns | undefined;
  if (!process.env.AWS_ENDPOINT_URL_DYNAMODB && !process.env.AWS_ENDPOINT_URL) {
    standIns = await startStandIns();
    Object.assign(process.env, standIns.env());
  }
  const suffix = randomBytes(4).toString('hex');
  process.env[TABLES.keyPool.envVar] = `${TABLES.keyPool.localName}-bench-${suffix}`;
  process.env[TABLES.requests.envVar] = `${TABLES.requests.localName}-bench-${suffix}`;
  process.env[TABLES.certificates.envVar] = `${TABLES.certificates.localName}-bench-${suffix}`;
  process.env[TABLES.audit.envVar] = `${TABLES.audit.localName}-bench-${suffix}`;
  const emptyPoolTable = `${TABLES.keyPool.localName}-bench-empty-${suffix}`;
  const raw = dynamoDbClient(loadConfig(process.env).aws);
  await ensureTables(raw, [TABLES.keyPool, TABLES.requests, TABLES.certificates, TABLES.audit]);
  await ensureTables(raw, [TABLES.keyPool], { [TABLES.keyPool.envVar]: emptyPoolTable });
  raw.destroy();
  return { standIns, emptyPoolTable };
}

/** A fresh sign request for one benchmark request. */
function benchRecord(keyType: KeyType): SignRequestRecord {
  const now = Date.now();
  return {
    id: randomUUID(),
    clientId: 'bench',
    status: 'received',
    digest: createHash('sha256').update(randomUUID()).digest('base64'),
    digestAlgorithm: 'SHA-256',
    keyType,
    signatureAlgorithm: defaultSignatureAlgorithm(keyType),
    signer: {
      commonName: 'Bo Bench',
      givenName: 'Bo',
      surname: 'Bench',
      serialNumber: '190001010000',
      country: 'SE',
    },
    receivedAt: now,
    expiresAt: Math.floor(now / 1000) + 3600,
  };
}

/** Prints the table and the ratios, and writes the result file. */
function report(
  keyType: KeyType,
  n: number,
  samples: Record<PathName, Sample[]>,
  fillPerKeyMs: number,
): void {
  const stat = (samples: Sample[], key: (typeof MEASURES)[number]) => ({
    median: median(samples.map((s) => s[key])),
    p99: percentile(
      samples.map((s) => s[key]),
      99,
    ),
  });
  const figures = Object.fromEntries(
    Object.entries(samples).map(([path, list]) => [
      path,
      Object.fromEntries(MEASURES.map((m) => [m, stat(list, m)])),
    ]),
  ) as Figures;
  const ratio = (path: 'pool' | 'poolPrefetch', m: (typeof MEASURES)[number], which: 'median' | 'p99') =>
    figures.onTheFly[m][which] / figures[path][m][which];
  const label = { acquireKeyMs: 'key acquisition', keyAndSignMs: 'key + sign', requestMs: 'whole request' };
  const rows: Row[] = MEASURES.map((m) => ({
    measure: label[m],
    'on-the-fly median': round(figures.onTheFly[m].median, 2),
    'on-the-fly p99': round(figures.onTheFly[m].p99, 2),
    'pool median': round(figures.pool[m].median, 2),
    'pool p99': round(figures.pool[m].p99, 2),
    'prefetch median': round(figures.poolPrefetch[m].median, 2),
    'prefetch p99': round(figures.poolPrefetch[m].p99, 2),
    'ratio pool': round(ratio('pool', m, 'median'), 1),
    'ratio prefetch': round(ratio('poolPrefetch', m, 'median'), 1),
  }));
  printTable(
    `${keyType}, ms per request, ${n} requests per path taking turns (after ${WARM_UP} warm-up); ratio = on-the-fly / pool (medians)`,
    rows,
  );
  const target = 50;
  console.log(
    `\nkey + sign, median: pool ${round(ratio('pool', 'keyAndSignMs', 'median'), 1)}x, ` +
      `pool + prefetch ${round(ratio('poolPrefetch', 'keyAndSignMs', 'median'), 1)}x faster than on the fly ` +
      `(target ${target}x). Pool fill: ${round(fillPerKeyMs, 1)} ms/key.`,
  );
  const overhead = overheadOf(samples.pool);
  printTable('pool path: the whole request beyond key + sign, medians (ms)', [overhead]);
  const ratios = (which: 'median' | 'p99') =>
    Object.fromEntries(
      (['pool', 'poolPrefetch'] as const).map((path) => [
        path,
        Object.fromEntries(MEASURES.map((m) => [m, round(ratio(path, m, which), 2)])),
      ]),
    );
  finish('pool', {
    keyType,
    requestsPerPath: n,
    warmUp: WARM_UP,
    ms: JSON.parse(JSON.stringify(figures, (_k, v: unknown) => (typeof v === 'number' ? round(v, 3) : v))),
    ratioMedian: ratios('median'),
    ratioP99: ratios('p99'),
    targetRatio: target,
    fillMsPerKey: round(fillPerKeyMs, 2),
    poolOverheadMedianMs: overhead,
    loadAverage: loadavg().map((v) => round(v, 2)),
  });
}

/**
 * Where the pool path's time beyond key + sign goes: the median of each of the signing core's other
 * stages, and the rest (the request record's start and finish writes, and what no stage times).
 */
function overheadOf(samples: readonly Sample[]): Row {
  const keyStages = new Set(['claim', 'unwrap', 'sign']);
  const names = [...new Set(samples.flatMap((s) => Object.keys(s.stageMs)))].filter((n) => !keyStages.has(n));
  const row: Record<string, number> = {
    'beyond key + sign': round(median(samples.map((s) => s.requestMs - s.keyAndSignMs)), 2),
  };
  for (const name of names.sort()) row[name] = round(median(samples.map((s) => s.stageMs[name] ?? 0)), 2);
  row['record writes and the rest'] = round(
    median(
      samples.map(
        (s) => s.requestMs - s.keyAndSignMs - names.reduce((sum, n) => sum + (s.stageMs[n] ?? 0), 0),
      ),
    ),
    2,
  );
  return row;
}
